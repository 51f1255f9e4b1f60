-- analyses/kernel_pace: the pace of one kernel through the run, one row per instance in start order
-- -- what `nsys recipe cuda_gpu_kern_pace --name NAME` tabulates ("the progress and consistency of a
-- particular CUDA kernel throughout the application": each instance's start, end, duration and the
-- time since the previous instance, with running sums), with the step each instance was launched
-- in, so a slow iteration stands out as a long duration or a long delta.
--
-- From: spans of kind 'kernel', kernels (short names), attribution and steps (the iteration).
-- `--set pace_kernel=NAME` picks the kernel: its name or its short name (nsys matches the short
-- name, the only one it reads). Without it each run's kernel is the one that runs once per step
-- (as many instances as the run has steps) with the most GPU time, else the one with the most GPU
-- time -- nsys has no default, its --name is required. Times are ns after the run's origin.
--
-- title: Pace of one kernel through the run, per instance and step (nsys recipe cuda_gpu_kern_pace)
-- group: kernel
-- include:
-- columns: run_id INTEGER, name VARCHAR, instance BIGINT, iteration INTEGER, device_id INTEGER, stream_id
--     BIGINT, start_ns BIGINT, end_ns BIGINT, duration_ns BIGINT, duration_accum_ns HUGEINT, delta_ns
--     BIGINT, delta_accum_ns HUGEINT
WITH kernel AS (
    SELECT s.run_id, s.span_id, s.name, s.device_id, s.stream_id, s.start_ns, s.end_ns, k.short_name
    FROM spans AS s LEFT JOIN kernels AS k USING (run_id, span_id)
    WHERE s.kind = 'kernel'
), step_counts AS (
    SELECT run_id, count(*) AS steps FROM steps GROUP BY run_id
), chosen AS (
    SELECT k.run_id, k.name
    FROM kernel AS k LEFT JOIN step_counts AS c USING (run_id)
    WHERE getvariable('xsp_pace_kernel') IS NULL
    GROUP BY k.run_id, k.name, c.steps
    QUALIFY row_number() OVER (PARTITION BY k.run_id ORDER BY (count(*) = c.steps) DESC NULLS LAST,
                                                              sum(k.end_ns - k.start_ns) DESC, k.name) = 1
), instances AS (
    SELECT k.*
    FROM kernel AS k
    WHERE k.name = getvariable('xsp_pace_kernel') OR k.short_name = getvariable('xsp_pace_kernel')
       OR (k.run_id, k.name) IN (SELECT (run_id, name) FROM chosen)
), paced AS (
    SELECT i.*, st.iteration,
           row_number() OVER w - 1 AS instance,
           i.end_ns - i.start_ns AS duration_ns,
           i.start_ns - lag(i.end_ns) OVER w AS delta_ns
    FROM instances AS i
    LEFT JOIN attribution AS a ON a.run_id = i.run_id AND a.span_id = i.span_id
    LEFT JOIN steps AS st ON st.run_id = a.run_id AND st.step_span_id = a.step_span_id
    WINDOW w AS (PARTITION BY i.run_id ORDER BY i.start_ns, i.span_id)
)
SELECT
    -- Run.
    p.run_id,
    -- The kernel (demangled name).
    p.name,
    -- Instance number in start order, from 0 (a row of nsys's pace tables).
    p.instance,
    -- Step (iteration) whose window holds the instance's launch; NULL outside every step.
    p.iteration,
    -- GPU and stream it ran on.
    p.device_id,
    -- Stream it ran on.
    p.stream_id,
    -- Start, ns after the run's origin (nsys: start).
    p.start_ns - r.origin_ns AS start_ns,
    -- End, ns after the run's origin (nsys: end).
    p.end_ns - r.origin_ns AS end_ns,
    -- Duration, ns (nsys: duration).
    p.duration_ns,
    -- Summed duration of this and every earlier instance, ns (nsys: duration_accum).
    sum(p.duration_ns) OVER w AS duration_accum_ns,
    -- Time from the previous instance's end to this one's start, ns; NULL for the first (nsys: delta).
    p.delta_ns,
    -- Summed deltas up to this instance, ns (nsys: delta_accum).
    coalesce(sum(p.delta_ns) OVER w, 0) AS delta_accum_ns
FROM paced AS p JOIN runs AS r USING (run_id)
WINDOW w AS (PARTITION BY p.run_id ORDER BY p.instance)
ORDER BY p.run_id, p.instance;
