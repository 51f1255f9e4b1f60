-- analyses/sync_calls: the CPU calls that make the CPU wait (the taxonomy's sync class,
-- xsp_trace/formats/cuda_api.py) -- explicit (cudaDeviceSynchronize, cudaStreamSynchronize,
-- cudaEventSynchronize), implicit (cudaMemcpy, cudaMemset, cudaFree, cudaHostRegister ... without
-- Async), async copies to or from pageable memory (cudaMemcpyAsync Device -> Pageable ...) -- and
-- the waits Kineto records itself (cuda_sync activities: kind sync), per run, name, copy endpoints
-- and the framework op they come from, with how many fall inside the steps (the hot loop).
--
-- From: xsp_cpu_calls (prelude: API calls with their class), xsp_call_origin (the outermost op
-- enclosing a call), spans of kind sync, steps (a call is in a step when it starts inside a step
-- window of its process).
--
-- title: Synchronising calls (CPU waits for the GPU)
-- group: gpu
-- include: lib/sync
-- columns: run_id INTEGER, name VARCHAR, sync_kind VARCHAR, copy_endpoints VARCHAR, origin VARCHAR,
--     calls BIGINT, calls_in_steps BIGINT, total_ns HUGEINT, total_in_steps_ns HUGEINT, avg_ns DOUBLE,
--     max_ns BIGINT
WITH calls AS (
    SELECT c.run_id, c.span_id, c.name, c.start_ns, c.end_ns, c.pid, c.wait_kind AS sync_kind, c.copy_endpoints,
           xsp_call_origin(c.run_id, c.span_id) AS origin
    FROM xsp_cpu_calls AS c
    WHERE c.cpu_class = 'sync'
    UNION ALL
    SELECT s.run_id, s.span_id, s.name, s.start_ns, s.end_ns, s.pid, 'recorded wait', NULL, NULL
    FROM spans AS s
    WHERE s.kind = 'sync'
), placed AS (
    SELECT c.*, EXISTS (SELECT 1 FROM steps AS st WHERE st.run_id = c.run_id AND st.pid IS NOT DISTINCT FROM c.pid
                                                     AND c.start_ns >= st.start_ns AND c.start_ns < st.end_ns) AS in_step
    FROM calls AS c
)
SELECT
    -- Run.
    run_id,
    -- The call (or recorded wait) name.
    name,
    -- Why it waits: explicit, implicit, pageable copy (an async copy to or from pageable memory), recorded wait.
    sync_kind,
    -- For copies: their memory kinds, e.g. 'Device -> Pageable' (NULL: not a copy or not recorded).
    copy_endpoints,
    -- The framework op the calls come from: the outermost op enclosing them, e.g. aten::to (NULL: none).
    origin,
    -- Number of calls.
    count(*) AS calls,
    -- How many of them start inside a step (the training / inference loop).
    count(*) FILTER (WHERE in_step) AS calls_in_steps,
    -- Summed duration, ns (the time the CPU -- or for recorded waits the GPU stream -- waited).
    sum(end_ns - start_ns) AS total_ns,
    -- The part of it in calls that start inside a step, ns.
    coalesce(sum(end_ns - start_ns) FILTER (WHERE in_step), 0) AS total_in_steps_ns,
    -- Mean duration per call, ns.
    round(avg(end_ns - start_ns), 1) AS avg_ns,
    -- Longest call, ns.
    max(end_ns - start_ns) AS max_ns
FROM placed
GROUP BY run_id, name, sync_kind, copy_endpoints, origin
ORDER BY run_id, total_ns DESC, name, sync_kind, copy_endpoints, origin;
