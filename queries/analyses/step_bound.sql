-- analyses/step_bound: is each step (training / inference iteration) host-bound or device-bound?
-- How much of the step the GPU was busy, how much CPU time went into launching and into waiting
-- for the GPU.
--
-- From: steps, xsp_gpu_busy_intervals (prelude; the GPUs that ran work launched in the step, busy
-- time clipped to the step window), launches (launch calls: API calls that launched GPU work),
-- xsp_sync_call_kind (xsp_trace/formats/cuda_api.py) for synchronising calls, attribution (the
-- step of each span, any thread of the step's process).
-- Verdict: device-bound when the GPU was busy for at least the variable xsp_device_bound_pct
-- (default 80) percent of the step; otherwise host-bound, 'launch-bound' when launch calls took
-- more CPU time than the GPU was busy, 'sync-bound' when synchronising calls took over half the step.
WITH step_gpus AS (
    SELECT DISTINCT att.run_id, att.step_span_id, w.device_id
    FROM attribution AS att JOIN xsp_gpu_work AS w ON w.run_id = att.run_id AND w.span_id = att.span_id
    WHERE att.step_span_id IS NOT NULL
), busy AS (
    SELECT st.run_id, st.step_span_id,
           sum(least(i.end_ns, st.end_ns) - greatest(i.start_ns, st.start_ns)) AS gpu_busy_ns
    FROM steps AS st
    JOIN step_gpus AS g ON g.run_id = st.run_id AND g.step_span_id = st.step_span_id
    JOIN xsp_gpu_busy_intervals AS i ON i.run_id = g.run_id AND i.device_id = g.device_id
                                   AND i.start_ns < st.end_ns AND i.end_ns > st.start_ns
    GROUP BY st.run_id, st.step_span_id
), cpu AS (
    SELECT att.run_id, att.step_span_id,
           sum(s.end_ns - s.start_ns) FILTER (WHERE EXISTS (SELECT 1 FROM launches AS l
                                                            WHERE l.run_id = s.run_id AND l.api_span_id = s.span_id)) AS launch_ns,
           sum(s.end_ns - s.start_ns) FILTER (WHERE xsp_sync_call_kind(s.kind, s.name) IS NOT NULL) AS sync_ns
    FROM attribution AS att JOIN spans AS s ON s.run_id = att.run_id AND s.span_id = att.span_id
    WHERE s.kind = 'api' AND att.step_span_id IS NOT NULL
    GROUP BY att.run_id, att.step_span_id
), joined AS (
    SELECT st.run_id, st.iteration, st.end_ns - st.start_ns AS step_ns, coalesce(b.gpu_busy_ns, 0) AS gpu_busy_ns,
           coalesce(c.launch_ns, 0) AS launch_ns, coalesce(c.sync_ns, 0) AS sync_ns
    FROM steps AS st
    LEFT JOIN busy AS b ON b.run_id = st.run_id AND b.step_span_id = st.step_span_id
    LEFT JOIN cpu AS c ON c.run_id = st.run_id AND c.step_span_id = st.step_span_id
)
SELECT
    -- Run of the step.
    run_id,
    -- Iteration of the step (ProfilerStep#N; NULL where the step has no number).
    iteration,
    -- Step wall time, ms.
    round(step_ns / 1e6, 6) AS step_ms,
    -- Time inside the step with its GPU(s) busy (union of kernels, copies, sets; summed over GPUs), ms.
    round(gpu_busy_ns / 1e6, 6) AS gpu_busy_ms,
    -- That busy time as a percent of the step's wall time.
    round(100.0 * gpu_busy_ns / nullif(step_ns, 0), 2) AS gpu_busy_pct,
    -- CPU time in launch calls during the step (all its threads), ms.
    round(launch_ns / 1e6, 6) AS launch_ms,
    -- CPU time in synchronising calls during the step (all its threads), ms.
    round(sync_ns / 1e6, 6) AS sync_ms,
    -- device-bound, or host-bound / launch-bound / sync-bound (see the header).
    CASE WHEN 100.0 * gpu_busy_ns / nullif(step_ns, 0) >= coalesce(getvariable('xsp_device_bound_pct'), 80) THEN 'device-bound'
         WHEN launch_ns > gpu_busy_ns THEN 'launch-bound'
         WHEN sync_ns > step_ns / 2 THEN 'sync-bound'
         ELSE 'host-bound' END AS bound
FROM joined
ORDER BY run_id, iteration;
