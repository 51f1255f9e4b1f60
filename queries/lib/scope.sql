-- lib/scope: the GPU work outside the profiled scope of each run -- what Holistic
-- Trace Analysis 0.5 leaves out of every analysis (Trace._filter_irrelevant_gpu_kernels, with
-- include_last_profiler_step=True) and `xsp-trace analyze --scope profiled` leaves out too.
-- include:
--
-- From: spans (GPU kernels, copies and sets; the launching API calls), launches, steps -- as the
-- session sees them after --run / --iteration / --window. In a run with two or more steps, a GPU
-- operation is outside the profiled scope when the trace holds no call that launched it (it was
-- launched before the trace started, or its call was lost) or when its call started after the end
-- of the run's last step. A run with fewer than two steps has no work outside (as HTA, which then
-- filters nothing). The default scope (--scope all) counts every GPU operation of the trace.
CREATE OR REPLACE TEMP TABLE xsp_unprofiled_gpu_work AS
WITH last_step AS (
    SELECT run_id, max(end_ns) AS last_step_end_ns FROM steps GROUP BY run_id HAVING count(*) >= 2
), launched AS (
    SELECT g.run_id, g.span_id, g.kind, g.device_id, g.end_ns - g.start_ns AS duration_ns, s.last_step_end_ns,
           min(a.start_ns) AS launch_start_ns
    FROM spans AS g
    JOIN last_step AS s USING (run_id)
    LEFT JOIN launches AS l ON l.run_id = g.run_id AND l.gpu_span_id = g.span_id
    LEFT JOIN spans AS a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
    WHERE g.kind IN ('kernel', 'memcpy', 'memset')
    GROUP BY ALL
)
SELECT
    -- Run.
    run_id,
    -- The GPU operation left out (spans.span_id).
    span_id,
    -- kernel, memcpy or memset.
    kind,
    -- The GPU.
    device_id,
    -- Its duration, ns.
    duration_ns,
    -- Why: 'launch not in the trace' or 'launched after the last step'.
    CASE WHEN launch_start_ns IS NULL THEN 'launch not in the trace' ELSE 'launched after the last step' END AS reason
FROM launched
WHERE launch_start_ns IS NULL OR launch_start_ns > last_step_end_ns;
