-- analyses/diff_steps: what `xsp-trace diff` puts first -- per step (a run without steps: the run
-- from its first to its last span, as one unit) its duration, GPU busy time, kernel calls and GPU
-- time, and communication time.
--
-- From: steps, spans, attribution (the step of each GPU span, whatever thread launched it),
-- xsp_gpu_work (the work classes: communication = NCCL/RCCL kernels) and xsp_gpu_busy_intervals
-- (the union of each GPU's work) of the SQL library.
--
-- include: lib/busy
-- columns: run_id INTEGER, iteration INTEGER, step_ns BIGINT, gpus BIGINT, gpu_busy_ns HUGEINT,
--     kernel_calls BIGINT, kernel_ns HUGEINT, communication_ns HUGEINT
WITH units AS (
    SELECT run_id, step_span_id, iteration, start_ns, end_ns FROM steps
    UNION ALL
    SELECT run_id, NULL, NULL, min(start_ns), max(end_ns) FROM spans
    WHERE run_id NOT IN (SELECT run_id FROM steps)
    GROUP BY run_id
), gpus AS (
    SELECT run_id, count(DISTINCT device_id) AS gpus FROM xsp_gpu_work GROUP BY run_id
), busy AS (
    SELECT u.run_id, u.step_span_id, sum(least(i.end_ns, u.end_ns) - greatest(i.start_ns, u.start_ns)) AS busy_ns
    FROM units AS u
    JOIN xsp_gpu_busy_intervals AS i ON i.run_id = u.run_id AND i.start_ns < u.end_ns AND i.end_ns > u.start_ns
    GROUP BY u.run_id, u.step_span_id
), work AS (
    SELECT w.run_id, a.step_span_id,
           count(*) FILTER (WHERE w.kind = 'kernel') AS kernel_calls,
           sum(w.end_ns - w.start_ns) FILTER (WHERE w.kind = 'kernel') AS kernel_ns,
           sum(w.end_ns - w.start_ns) FILTER (WHERE w.work_class = 'communication') AS communication_ns
    FROM xsp_gpu_work AS w
    LEFT JOIN attribution AS a USING (run_id, span_id)
    GROUP BY w.run_id, a.step_span_id
)
SELECT
    -- The run.
    u.run_id,
    -- The step's iteration (NULL: a run without steps, taken whole).
    u.iteration,
    -- The step's duration (the whole run's, first to last span, without steps), ns.
    u.end_ns - u.start_ns AS step_ns,
    -- GPUs that ran work in the run (0: a CPU-only run).
    coalesce(g.gpus, 0) AS gpus,
    -- Time the GPUs were busy inside the step, summed over the GPUs, ns (idle = step_ns * gpus - busy).
    coalesce(b.busy_ns, 0) AS gpu_busy_ns,
    -- Kernels launched in the step.
    coalesce(w.kernel_calls, 0) AS kernel_calls,
    -- Their summed GPU time, ns.
    coalesce(w.kernel_ns, 0) AS kernel_ns,
    -- GPU time of the communication kernels launched in the step, ns.
    coalesce(w.communication_ns, 0) AS communication_ns
FROM units AS u
LEFT JOIN gpus AS g USING (run_id)
LEFT JOIN busy AS b ON b.run_id = u.run_id AND b.step_span_id IS NOT DISTINCT FROM u.step_span_id
LEFT JOIN work AS w ON w.run_id = u.run_id AND w.step_span_id IS NOT DISTINCT FROM u.step_span_id
ORDER BY u.run_id, u.iteration;
