-- analyses/gpu_busy_idle: how busy each GPU was -- the union of its kernel, memcpy and memset
-- intervals against the window from its first to its last GPU operation (what Holistic Trace
-- Analysis's temporal breakdown and the Nsight recipes report as busy/idle time).
--
-- From: spans of kind kernel, memcpy, memset. Overlapping operations (several streams) count once.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts with include_last_profiler_step=True (its default also drops
-- the work launched in the last step; lib/scope.sql says which work is left out).
--
-- title: GPU busy and idle time
-- group: gpu
-- include:
-- columns: run_id INTEGER, device_id INTEGER, window_ns BIGINT, busy_ns HUGEINT, idle_ns HUGEINT,
--     busy_pct DOUBLE, kernel_ns HUGEINT, memcpy_ns HUGEINT, memset_ns HUGEINT, busy_intervals BIGINT
WITH gpu AS (
    SELECT run_id, device_id, kind, start_ns, end_ns
    FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset')
), ordered AS (
    SELECT *, max(end_ns) OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM gpu
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
), merged AS (
    SELECT run_id, device_id, island, min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM islands GROUP BY run_id, device_id, island
), busy AS (
    SELECT run_id, device_id, min(start_ns) AS first_ns, max(end_ns) AS last_ns,
           sum(end_ns - start_ns) AS busy_ns, count(*) AS busy_intervals
    FROM merged GROUP BY run_id, device_id
), by_kind AS (
    SELECT run_id, device_id,
           sum(end_ns - start_ns) FILTER (WHERE kind = 'kernel') AS kernel_ns,
           sum(end_ns - start_ns) FILTER (WHERE kind = 'memcpy') AS memcpy_ns,
           sum(end_ns - start_ns) FILTER (WHERE kind = 'memset') AS memset_ns
    FROM gpu GROUP BY run_id, device_id
)
SELECT
    -- Run and GPU (CUDA device ordinal).
    b.run_id,
    -- GPU (CUDA device ordinal).
    b.device_id,
    -- Window from the first GPU operation's start to the last one's end, ns (operations of the scope).
    b.last_ns - b.first_ns AS window_ns,
    -- Busy time: the union of all GPU operations, ns; idle time: the rest of the window, ns.
    b.busy_ns,
    -- Idle time: the window minus the busy time, ns (work outside the scope counts as idle).
    (b.last_ns - b.first_ns) - b.busy_ns AS idle_ns,
    -- Busy share of the window, percent.
    round(100.0 * b.busy_ns / nullif(b.last_ns - b.first_ns, 0), 2) AS busy_pct,
    -- Summed durations by kind (overlaps counted per operation), ns.
    coalesce(k.kernel_ns, 0) AS kernel_ns,
    -- Summed memcpy durations, ns.
    coalesce(k.memcpy_ns, 0) AS memcpy_ns,
    -- Summed memset durations, ns.
    coalesce(k.memset_ns, 0) AS memset_ns,
    -- Number of busy stretches (gaps between them are the idle periods).
    b.busy_intervals
FROM busy AS b JOIN by_kind AS k USING (run_id, device_id)
ORDER BY b.run_id, b.device_id;
