-- analyses/step_bound: is each step (training / inference iteration) device-bound, or bound by what
-- the CPU was doing -- waiting in blocking calls (sync), launching (launch), other host work? How
-- much of the step the GPU was busy, and the step's CPU time in the taxonomy's four classes.
--
-- From: steps, xsp_gpu_busy_intervals (prelude; the GPUs that ran work launched in the step, busy
-- time clipped to the step window), xsp_step_cpu_time (prelude: per thread of the step's process,
-- its time in the step window as launch / sync / host / idle; the classes are defined in
-- xsp_trace/formats/cuda_api.py), attribution (the step of each GPU span, whatever thread launched it).
-- Verdict, in this order:
--   device-bound  the GPU was busy for at least xsp_device_bound_pct (default 80) % of the step;
--   sync-bound    the step's threads spent at least xsp_sync_bound_pct (default 25) % of the step
--                 blocked in calls that wait (synchronisation, synchronous copies, async copies to
--                 or from pageable memory): CPU and GPU take turns instead of overlapping, so the
--                 GPU idles while the CPU prepares the work that follows each wait. Decided before
--                 launch-bound: a blocking copy is also a launch, and launching faster cannot help;
--   launch-bound  the calls that launched GPU work and returned without waiting took more CPU time
--                 than the GPU was busy (many short kernels);
--   host-bound    otherwise: host work (framework ops, Python, data loading) or an idle CPU.
--
-- title: Host-bound or device-bound, per step
-- group: gpu
-- include: lib/busy, lib/steps
-- columns: run_id INTEGER, iteration INTEGER, step_ms DOUBLE, gpu_busy_ms DOUBLE, gpu_busy_pct DOUBLE,
--     launch_ms DOUBLE, sync_ms DOUBLE, thread_launch_ms DOUBLE, thread_sync_ms DOUBLE,
--     thread_host_ms DOUBLE, thread_idle_ms DOUBLE, bound VARCHAR
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
    SELECT run_id, step_span_id,
           sum(launch_ns) AS launch_ns, sum(sync_ns) AS sync_ns,
           sum(launch_ns) FILTER (WHERE step_thread) AS thread_launch_ns,
           sum(sync_ns) FILTER (WHERE step_thread) AS thread_sync_ns,
           sum(host_ns) FILTER (WHERE step_thread) AS thread_host_ns,
           sum(idle_ns) FILTER (WHERE step_thread) AS thread_idle_ns
    FROM xsp_step_cpu_time
    GROUP BY run_id, step_span_id
), joined AS (
    SELECT st.run_id, st.iteration, st.end_ns - st.start_ns AS step_ns, coalesce(b.gpu_busy_ns, 0) AS gpu_busy_ns,
           coalesce(c.launch_ns, 0) AS launch_ns, coalesce(c.sync_ns, 0) AS sync_ns,
           coalesce(c.thread_launch_ns, 0) AS thread_launch_ns, coalesce(c.thread_sync_ns, 0) AS thread_sync_ns,
           coalesce(c.thread_host_ns, 0) AS thread_host_ns, coalesce(c.thread_idle_ns, st.end_ns - st.start_ns) AS thread_idle_ns
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
    -- CPU time in launch calls that returned without waiting, in the step window (all its process's threads), ms.
    round(launch_ns / 1e6, 6) AS launch_ms,
    -- CPU time blocked in calls that wait (sync class), in the step window (all its process's threads), ms.
    round(sync_ns / 1e6, 6) AS sync_ms,
    -- The step's own thread (the one running the loop), its window split into the four classes
    -- (launch + sync + host + idle = step_ms): launching, ms.
    round(thread_launch_ns / 1e6, 6) AS thread_launch_ms,
    -- ... blocked in calls that wait, ms.
    round(thread_sync_ns / 1e6, 6) AS thread_sync_ms,
    -- ... in other recorded spans (framework ops, Python, data loading, other API calls), ms.
    round(thread_host_ns / 1e6, 6) AS thread_host_ms,
    -- ... in no recorded span, ms.
    round(thread_idle_ns / 1e6, 6) AS thread_idle_ms,
    -- device-bound, sync-bound, launch-bound or host-bound (see the header).
    CASE WHEN 100.0 * gpu_busy_ns / nullif(step_ns, 0) >= coalesce(getvariable('xsp_device_bound_pct'), 80) THEN 'device-bound'
         WHEN 100.0 * sync_ns / nullif(step_ns, 0) >= coalesce(getvariable('xsp_sync_bound_pct'), 25) THEN 'sync-bound'
         WHEN launch_ns > gpu_busy_ns THEN 'launch-bound'
         ELSE 'host-bound' END AS bound
FROM joined
ORDER BY run_id, iteration;
