-- analyses/cuda_sync_memset: sets of pinned or managed memory made by synchronous cudaMemset*
-- calls (no async), which block the CPU -- nsys analyze's cuda-sync-memset rule, longest first,
-- at most xsp_rule_rows per run.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_flagged_memops('cuda_sync_memset') (lib/rules: memops.dst_kind is the memory kind a set wrote); the
-- call name patterns (variables xsp_rule_sync_memset_api, xsp_rule_sync_memset_not_api) and the
-- memory kinds (xsp_rule_sync_memset_kinds) from xsp_trace/formats/nsys_rules.py (Kineto: the
-- kind in the set's name, "Memset (Device)").
--
-- title: Synchronous sets of pinned/managed memory (nsys analyze cuda-sync-memset)
-- group: rules
-- include: lib/rules
-- columns: run_id INTEGER, duration_ns BIGINT, start_ns BIGINT, memory_kind VARCHAR, bytes BIGINT,
--     bytes_mb DOUBLE, pid BIGINT, device_id INTEGER, stream_id BIGINT, api_name VARCHAR
SELECT
    -- Run.
    run_id,
    -- GPU duration of the set, ns.
    duration_ns,
    -- Start of the set on the GPU, ns after the run's origin (runs.origin_ns).
    start_ns,
    -- Memory kind that was set (Pinned or Managed).
    dst_kind AS memory_kind,
    -- Bytes set.
    bytes,
    -- The same in MB (10^6 bytes), as nsys prints it.
    bytes_mb,
    -- Process that launched the set.
    pid,
    -- GPU (CUDA device ordinal).
    device_id,
    -- GPU stream.
    stream_id,
    -- The API call that launched it (e.g. cudaMemset).
    api_name
FROM xsp_rules_flagged_memops('cuda_sync_memset')
ORDER BY run_id, duration_ns DESC, start_ns, span_id;
