-- analyses/pageable_memcpy: copies between the GPU and pageable (not pinned) host memory, per run,
-- direction and the call that issued them. The driver stages them through a pinned buffer: they are
-- slower, and the CPU sits in the call until the data is staged (to the device) or the copy is done
-- (to the host, after every GPU operation queued before it) -- even for Async calls. What they cost
-- is mostly that CPU time (cpu_ns), not their GPU time (total_ns).
--
-- From: spans of kind memcpy with memops.src_kind / dst_kind (nsys srcKind/dstKind, Kineto's
-- "Memcpy HtoD (Pageable -> Device)" names; the pageable kinds are the variable xsp_pageable_kinds
-- from xsp_trace/formats/cuda_api.py), launches and xsp_cpu_calls (the API call of each copy).
--
-- title: Copies from / to pageable host memory
-- group: gpu
-- include: lib/sync
-- columns: run_id INTEGER, copy_kind VARCHAR, api_name VARCHAR, copies BIGINT, bytes HUGEINT,
--     total_ns HUGEINT, gb_per_s DOUBLE, cpu_ns HUGEINT, blocking_calls BIGINT
WITH copies AS (
    SELECT s.run_id, s.span_id, m.copy_kind, m.bytes, s.end_ns - s.start_ns AS gpu_ns,
           c.name AS api_name, c.end_ns - c.start_ns AS api_ns, c.cpu_class
    FROM spans AS s
    JOIN memops AS m ON m.run_id = s.run_id AND m.span_id = s.span_id
    LEFT JOIN launches AS l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id
    LEFT JOIN xsp_cpu_calls AS c ON c.run_id = l.run_id AND c.span_id = l.api_span_id
    WHERE s.kind = 'memcpy'
      AND (list_contains(getvariable('xsp_pageable_kinds'), m.src_kind) OR list_contains(getvariable('xsp_pageable_kinds'), m.dst_kind))
)
SELECT
    -- Run.
    run_id,
    -- The copy direction (HtoD, DtoH ...).
    copy_kind,
    -- The API call that issued them (cudaMemcpyAsync, cudaMemcpy ...; NULL: no launch recorded).
    api_name,
    -- Number of copies to or from pageable memory.
    count(*) AS copies,
    -- Bytes they moved.
    sum(bytes) AS bytes,
    -- Their summed GPU time, ns.
    sum(gpu_ns) AS total_ns,
    -- Achieved bandwidth over those copies, GB/s (1e9 bytes/s).
    round(sum(bytes) / nullif(sum(gpu_ns), 0), 3) AS gb_per_s,
    -- CPU time in the calls that issued them, ns: the time the CPU was held (NULL: no call recorded).
    sum(api_ns) AS cpu_ns,
    -- How many of those calls are in the taxonomy's sync class (they blocked the CPU).
    count(*) FILTER (WHERE cpu_class = 'sync') AS blocking_calls
FROM copies
GROUP BY run_id, copy_kind, api_name
ORDER BY run_id, coalesce(sum(api_ns), 0) + sum(gpu_ns) DESC, copy_kind, api_name;
