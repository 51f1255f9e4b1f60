-- analyses/sync_calls: the CPU calls that make the CPU wait for the GPU -- explicit
-- (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize) and implicit (cudaMemcpy,
-- cudaMemset, cudaFree, cudaHostRegister ... without Async), and the waits Kineto records itself
-- (cuda_sync activities: kind sync) -- per run and name, with how many fall inside the steps (the
-- hot loop).
--
-- From: spans of kind api (xsp_sync_call_kind: patterns in xsp_trace/formats/cuda_api.py) and of
-- kind sync, steps (a call is in a step when it starts inside a step window of its process).
WITH calls AS (
    SELECT s.run_id, s.span_id, s.name, s.start_ns, s.end_ns, s.pid,
           CASE WHEN s.kind = 'sync' THEN 'recorded wait' ELSE xsp_sync_call_kind(s.kind, s.name) END AS sync_kind
    FROM spans AS s
    WHERE s.kind = 'sync' OR xsp_sync_call_kind(s.kind, s.name) IS NOT NULL
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
    -- How it synchronises: explicit, implicit, recorded wait.
    sync_kind,
    -- Number of calls.
    count(*) AS calls,
    -- How many of them start inside a step (the training / inference loop).
    count(*) FILTER (WHERE in_step) AS calls_in_steps,
    -- Summed duration, ns (the time the CPU -- or for recorded waits the GPU stream -- waited).
    sum(end_ns - start_ns) AS total_ns,
    -- Mean duration per call, ns.
    round(avg(end_ns - start_ns), 1) AS avg_ns,
    -- Longest call, ns.
    max(end_ns - start_ns) AS max_ns
FROM placed
GROUP BY run_id, name, sync_kind
ORDER BY run_id, total_ns DESC, name, sync_kind;
