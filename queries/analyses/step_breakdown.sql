-- analyses/step_breakdown: GPU work charged to every step (inference / training iteration) of
-- every run, whatever CPU thread launched it, split by training phase.
--
-- From: steps, spans (kernels and their iteration), attribution (step and phase of each kernel),
-- launches (the launching API call and its thread). A kernel belongs to the step whose window, on
-- its process's CPU timeline, holds the start of the call that launched it -- so kernels the
-- autograd thread launches during loss.backward() count in their step. Uncorrected: every
-- kernel as recorded in that run.
--
-- title: GPU time per step, by phase (every thread's launches)
-- group: model
-- include:
-- columns: run_id INTEGER, iteration INTEGER, step VARCHAR, source VARCHAR, step_ms DOUBLE, kernels BIGINT,
--     kernels_other_threads BIGINT, gpu_kernel_ms DOUBLE, gpu_pct DOUBLE, forward_ms DOUBLE,
--     backward_ms DOUBLE, optimizer_ms DOUBLE, unphased_ms DOUBLE
WITH kernels AS (
    SELECT k.run_id, att.step_span_id, att.phase, k.end_ns - k.start_ns AS duration_ns,
           api.tid AS launch_tid, st.tid AS step_tid
    FROM spans AS k
    JOIN attribution AS att ON att.run_id = k.run_id AND att.span_id = k.span_id
    JOIN steps AS st ON st.run_id = att.run_id AND st.step_span_id = att.step_span_id
    LEFT JOIN launches AS l ON l.run_id = k.run_id AND l.gpu_span_id = k.span_id
    LEFT JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
    WHERE k.kind = 'kernel'
), per_step AS (
    SELECT run_id, step_span_id,
           count(*) AS kernels,
           count(*) FILTER (WHERE launch_tid IS DISTINCT FROM step_tid) AS kernels_other_threads,
           sum(duration_ns) AS gpu_ns,
           sum(duration_ns) FILTER (WHERE phase = 'forward') AS forward_ns,
           sum(duration_ns) FILTER (WHERE phase = 'backward') AS backward_ns,
           sum(duration_ns) FILTER (WHERE phase = 'optimizer') AS optimizer_ns,
           sum(duration_ns) FILTER (WHERE phase IS NULL) AS unphased_ns
    FROM kernels
    GROUP BY run_id, step_span_id
)
SELECT
    -- Run and the step's iteration number (N of ProfilerStep#N, or the model range's ordinal).
    st.run_id,
    -- Iteration number (N of ProfilerStep#N, or the model range's ordinal).
    st.iteration,
    -- Name of the step range and whether it is a model range or an iteration range.
    s.name AS step,
    -- Whether the step is a model range or an iteration range.
    st.source,
    -- Wall time of the step on its CPU thread, ms.
    round((st.end_ns - st.start_ns) / 1e6, 6) AS step_ms,
    -- Kernels launched inside the step window, and how many of them from another thread than the step's.
    coalesce(p.kernels, 0) AS kernels,
    -- Of those, kernels launched from another thread than the step's (e.g. autograd's).
    coalesce(p.kernels_other_threads, 0) AS kernels_other_threads,
    -- Summed kernel time of those kernels, ms, and its share of the step's wall time, percent
    -- (kernels overlapping on several streams can make it exceed 100).
    round(coalesce(p.gpu_ns, 0) / 1e6, 6) AS gpu_kernel_ms,
    -- That kernel time as a share of the step's wall time, percent (overlapping streams can exceed 100).
    round(100.0 * coalesce(p.gpu_ns, 0) / nullif(st.end_ns - st.start_ns, 0), 2) AS gpu_pct,
    -- The kernel time by phase, ms: forward, backward, optimizer, and where the trace names no phase.
    round(coalesce(p.forward_ns, 0) / 1e6, 6) AS forward_ms,
    -- Kernel time of the backward phase, ms.
    round(coalesce(p.backward_ns, 0) / 1e6, 6) AS backward_ms,
    -- Kernel time of the optimizer phase, ms.
    round(coalesce(p.optimizer_ns, 0) / 1e6, 6) AS optimizer_ms,
    -- Kernel time where the trace names no phase, ms.
    round(coalesce(p.unphased_ns, 0) / 1e6, 6) AS unphased_ms
FROM steps AS st
JOIN spans AS s ON s.run_id = st.run_id AND s.span_id = st.step_span_id
LEFT JOIN per_step AS p ON p.run_id = st.run_id AND p.step_span_id = st.step_span_id
ORDER BY st.run_id, st.start_ns;
