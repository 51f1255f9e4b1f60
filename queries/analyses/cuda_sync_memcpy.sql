-- analyses/cuda_sync_memcpy: copies made by synchronous cudaMemcpy* calls (no Async), which block
-- the CPU until they are done -- nsys analyze's cuda-sync-memcpy rule, longest first, at most
-- xsp_rule_rows per run. Host-to-device copies of at most 64 KB are left out (CUDA returns once
-- they are staged), as nsys does.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_flagged_memops('cuda_sync_memcpy') (lib/rules); the call name patterns (variables
-- xsp_rule_sync_memcpy_api, xsp_rule_sync_memcpy_not_api) and the small-copy rule
-- (xsp_rule_small_htod_bytes, xsp_rule_small_copy_kind) from xsp_trace/formats/nsys_rules.py.
-- Copies within one device are not left out: the schema keeps no source and destination
-- device (nsys drops srcDeviceId = dstDeviceId, which CUPTI records for peer copies only).
-- Suggestion, as nsys gives it: cudaMemcpy*Async.
--
-- title: Synchronous copies (nsys analyze cuda-sync-memcpy)
-- group: rules
-- include: lib/rules
-- columns: run_id INTEGER, duration_ns BIGINT, start_ns BIGINT, src_kind VARCHAR, dst_kind VARCHAR,
--     bytes BIGINT, bytes_mb DOUBLE, pid BIGINT, device_id INTEGER, stream_id BIGINT, api_name VARCHAR
SELECT
    -- Run.
    run_id,
    -- GPU duration of the copy, ns.
    duration_ns,
    -- Start of the copy on the GPU, ns after the run's origin (runs.origin_ns).
    start_ns,
    -- Memory kind of the source (Pageable, Pinned, Device, ...).
    src_kind,
    -- Memory kind of the destination.
    dst_kind,
    -- Bytes copied.
    bytes,
    -- The same in MB (10^6 bytes), as nsys prints it.
    bytes_mb,
    -- Process that launched the copy.
    pid,
    -- GPU (CUDA device ordinal).
    device_id,
    -- GPU stream.
    stream_id,
    -- The API call that launched it (e.g. cudaMemcpy).
    api_name
FROM xsp_rules_flagged_memops('cuda_sync_memcpy')
ORDER BY run_id, duration_ns DESC, start_ns, span_id;
