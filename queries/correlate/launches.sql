-- correlate/launches: which CUDA API call launched each GPU span of one run.
--
-- From: `spans` of run getvariable('xsp_run_id') -- API calls (kind = 'api') and GPU work
-- (kernel, memcpy, memset, sync), both carrying pid and correlation_id.
-- Computes: one `launches` row per GPU span whose (pid, correlation_id) matches an API call.
-- Correlation ids are unique only within a process, hence the pid in the join. Should a
-- (pid, correlation_id) occur on several API rows, the earliest-started call is taken.
INSERT INTO launches (run_id, api_span_id, gpu_span_id, correlation_id)
SELECT
    -- Run of both spans.
    gpu.run_id,
    -- The launching API call.
    arg_min(api.span_id, (api.start_ns, api.span_id)),
    -- The GPU span.
    gpu.span_id,
    -- The correlation id both carry.
    gpu.correlation_id
FROM spans AS gpu
JOIN spans AS api
    ON  api.run_id = gpu.run_id
    AND api.pid = gpu.pid
    AND api.correlation_id = gpu.correlation_id
    AND api.kind = 'api'
WHERE gpu.run_id = getvariable('xsp_run_id')
  AND gpu.kind IN ('kernel', 'memcpy', 'memset', 'sync')
  AND gpu.correlation_id IS NOT NULL
GROUP BY gpu.run_id, gpu.span_id, gpu.correlation_id;
