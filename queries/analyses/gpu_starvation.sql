-- analyses/gpu_starvation: stretches where a GPU sat idle longer than xsp_rule_gap_ms (default
-- 500 ms) between the first and the last GPU work of a process on it -- nsys analyze's gpu-starv
-- rule, longest first, at most xsp_rule_rows per run.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_gpu_ops (prelude_rules: kernels, copies and sets in the window), per run,
-- process and GPU. As nsys: the k-th end (ends in order) and the (k+1)-th start (starts in
-- order) bound a gap when the end comes first -- nothing runs between them. nsys also counts
-- its own "CUDA profiling overhead" rows as GPU work; the schema does not keep them.
--
-- title: GPU idle gaps above --set gap (nsys analyze gpu-starv)
-- group: rules
-- include: lib/rules
-- columns: run_id INTEGER, row_num BIGINT, duration_ns BIGINT, start_ns BIGINT, pid BIGINT, device_id INTEGER
WITH ops AS (
    SELECT * FROM xsp_rules_gpu_ops
), starts AS (
    SELECT run_id, pid, device_id, start_ns,
           row_number() OVER (PARTITION BY run_id, pid, device_id ORDER BY start_ns) AS ordinal
    FROM ops
), ends AS (
    SELECT run_id, pid, device_id, end_ns,
           row_number() OVER (PARTITION BY run_id, pid, device_id ORDER BY end_ns) AS ordinal
    FROM ops
), gaps AS (
    SELECT e.run_id, e.pid, e.device_id, e.end_ns AS gap_start_ns, s.start_ns - e.end_ns AS gap_ns
    FROM ends AS e
    JOIN starts AS s ON s.run_id = e.run_id AND s.pid = e.pid AND s.device_id = e.device_id AND s.ordinal = e.ordinal + 1
    WHERE s.start_ns > e.end_ns AND s.start_ns - e.end_ns > (SELECT gap_ns FROM xsp_rules_settings)
)
SELECT
    -- Run.
    run_id,
    -- Rank of the gap in its run, longest first (nsys's Row#).
    row_number() OVER (PARTITION BY run_id ORDER BY gap_ns DESC, gap_start_ns, pid, device_id) AS row_num,
    -- Length of the idle gap, ns.
    gap_ns AS duration_ns,
    -- Start of the gap (end of the GPU work before it), ns after the run's origin (runs.origin_ns).
    gap_start_ns - r.origin_ns AS start_ns,
    -- Process whose GPU work the gap is between.
    pid,
    -- GPU (CUDA device ordinal).
    device_id
FROM gaps
JOIN runs AS r USING (run_id)
QUALIFY row_num <= (SELECT row_limit FROM xsp_rules_settings)
ORDER BY run_id, row_num;
