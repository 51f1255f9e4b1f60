-- perfetto/slice_part_details: the kernel and memop columns of one part of the slices, one row
-- per kernel or copy/set span of the part, unsorted -- xsp_trace/perfetto/slice_order.py places
-- each beside its span's row. A query of its own, not joined in perfetto/slices.sql: most spans
-- are neither, and carrying ten mostly-NULL columns through the part's joins and result cost more
-- than this query and the placing together.
--
-- From: perfetto_kernels and perfetto_memops (queries/perfetto/slice_parts.sql); the part as in
-- perfetto/slices.sql: run getvariable('xsp_perfetto_part_run'), span start in
-- [xsp_perfetto_part_first, xsp_perfetto_part_last].
SELECT
    -- The span (perfetto/slices.span_id of the same part): a kernel, or a copy or set.
    span_id,
    -- Kernel grid, "[x, y, z]".
    grid,
    -- Kernel block, "[x, y, z]".
    block,
    -- Registers per thread of a kernel.
    registers_per_thread,
    -- Static shared memory per block of a kernel, bytes.
    shared_mem_static_bytes,
    -- Dynamic shared memory per block of a kernel, bytes.
    shared_mem_dynamic_bytes,
    -- Profiler-estimated occupancy of a kernel, 0..1.
    occupancy_estimate,
    -- Direction of a copy.
    NULL::VARCHAR AS copy_kind,
    -- Bytes copied or set.
    NULL::BIGINT AS bytes,
    -- Memory kind of a copy's source.
    NULL::VARCHAR AS src_kind,
    -- Memory kind of a copy's destination.
    NULL::VARCHAR AS dst_kind
FROM perfetto_kernels
WHERE run_id = getvariable('xsp_perfetto_part_run')
  AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last')
UNION ALL
SELECT
    span_id,
    NULL::VARCHAR, NULL::VARCHAR, NULL::INTEGER, NULL::BIGINT, NULL::BIGINT, NULL::DOUBLE,
    copy_kind, bytes, src_kind, dst_kind
FROM perfetto_memops
WHERE run_id = getvariable('xsp_perfetto_part_run')
  AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last');
