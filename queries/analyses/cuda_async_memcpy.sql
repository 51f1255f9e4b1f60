-- analyses/cuda_async_memcpy: asynchronous copies that become synchronous because one side is
-- pageable host memory (the CPU waits for them) -- nsys analyze's cuda-async-memcpy rule, longest
-- first, at most xsp_rule_rows per run.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_flagged_memops('cuda_async_memcpy') (lib/rules: copies in the window with their launching call); the
-- call name pattern (variable xsp_rule_async_memcpy_api) and the pageable kind
-- (xsp_rule_pageable_kind) come from xsp_trace/formats/nsys_rules.py. Suggestion, as nsys gives
-- it: pinned memory instead.
--
-- title: Async copies made synchronous by pageable memory (nsys analyze cuda-async-memcpy)
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
    -- The API call that launched it (e.g. cudaMemcpyAsync).
    api_name
FROM xsp_rules_flagged_memops('cuda_async_memcpy')
ORDER BY run_id, duration_ns DESC, start_ns, span_id;
