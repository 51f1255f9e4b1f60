-- analyses/cuda_sync_api: calls that block the CPU until the device or a stream has finished
-- (cudaDeviceSynchronize, cudaStreamSynchronize) -- nsys analyze's cuda-sync-api rule, longest
-- first, at most xsp_rule_rows per run.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_api_calls (prelude_rules: API calls in the window); the call name patterns
-- (variable xsp_rule_sync_api, a list) from xsp_trace/formats/nsys_rules.py. Suggestion, as nsys
-- gives it: fewer synchronisations; cudaStreamWaitEvent / cudaEventSynchronize instead.
--
-- title: Device and stream synchronisation calls (nsys analyze cuda-sync-api)
-- group: rules
-- include: lib/rules
-- columns: run_id INTEGER, duration_ns BIGINT, start_ns BIGINT, pid BIGINT, tid BIGINT, api_name VARCHAR
SELECT
    -- Run.
    run_id,
    -- Duration of the call, ns (the time the CPU waited).
    end_ns - start_ns AS duration_ns,
    -- Start of the call, ns after the run's origin (runs.origin_ns).
    start_ns - r.origin_ns AS start_ns,
    -- Process of the call.
    pid,
    -- Thread of the call.
    tid,
    -- The call.
    name AS api_name
FROM xsp_rules_api_calls
JOIN runs AS r USING (run_id)
WHERE list_bool_or(list_transform(getvariable('xsp_rule_sync_api'), lambda pattern: name ILIKE pattern))
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY end_ns - start_ns DESC, start_ns, span_id) <= (SELECT row_limit FROM xsp_rules_settings)
ORDER BY run_id, duration_ns DESC, start_ns, span_id;
