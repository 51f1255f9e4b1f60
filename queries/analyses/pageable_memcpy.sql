-- analyses/pageable_memcpy: copies between the GPU and pageable (not pinned) host memory, per run
-- and direction. The driver stages them through a pinned buffer: they are slower and an Async
-- copy from pageable memory does not overlap with the CPU.
--
-- From: spans of kind memcpy with memops.src_kind / dst_kind (nsys srcKind/dstKind, Kineto's
-- "Memcpy HtoD (Pageable -> Device)" names); 'Pageable': xsp_trace/formats/cuda_api.py.
SELECT
    -- Run.
    s.run_id,
    -- The copy direction (HtoD, DtoH ...).
    m.copy_kind,
    -- Number of copies to or from pageable memory.
    count(*) AS copies,
    -- Bytes they moved.
    sum(m.bytes) AS bytes,
    -- Their summed GPU time, ns.
    sum(s.end_ns - s.start_ns) AS total_ns,
    -- Achieved bandwidth over those copies, GB/s (1e9 bytes/s).
    round(sum(m.bytes) / nullif(sum(s.end_ns - s.start_ns), 0), 3) AS gb_per_s
FROM spans AS s
JOIN memops AS m ON m.run_id = s.run_id AND m.span_id = s.span_id
WHERE s.kind = 'memcpy' AND getvariable('xsp_pageable') IN (m.src_kind, m.dst_kind)
GROUP BY s.run_id, m.copy_kind
ORDER BY s.run_id, total_ns DESC;
