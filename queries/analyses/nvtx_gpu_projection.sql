-- analyses/nvtx_gpu_projection: every CPU range (model, layer, op, annotation) projected onto the GPU.
--
-- From: runs (origin_ns: the start times shown are relative to it), spans, span_ancestors (a GPU span's ancestors are its launching API call and every range
-- that call ran in) and launches.
-- Computes: one row per range that launched GPU work (kernels, memcpy, memset): the interval
-- from the first start to the last end of that work -- what nsys's nvtx_gpu_proj_trace /
-- `nsys stats --report nvtxgpuproj` reports. Run by hand in DuckDB on any xsp-trace database.
--
-- title: NVTX ranges projected onto the GPU
-- group: gpu
-- include:
-- columns: run_id INTEGER, span_id BIGINT, kind VARCHAR, name VARCHAR, category VARCHAR, pid BIGINT,
--     tid BIGINT, depth INTEGER, cpu_start_ns BIGINT, cpu_duration_ns BIGINT, gpu_start_ns BIGINT,
--     gpu_duration_ns BIGINT, gpu_ops BIGINT, gpu_busy_ns HUGEINT
SELECT
    -- Run of the range.
    r.run_id,
    -- The range (spans.span_id).
    r.span_id,
    -- Its level: model, layer, op or annotation.
    r.kind,
    -- Range name (NVTX text or record_function name).
    r.name,
    -- NVTX domain or Kineto category.
    r.category,
    -- Process and thread that opened the range.
    r.pid,
    -- Thread of the range.
    r.tid,
    -- Nesting depth among CPU spans (0 = outermost).
    r.depth,
    -- Start of the range on the CPU, ns after the run's origin (runs.origin_ns).
    r.start_ns - o.origin_ns AS cpu_start_ns,
    -- Duration of the range on the CPU, ns.
    r.end_ns - r.start_ns AS cpu_duration_ns,
    -- Start of the first GPU operation launched inside the range, ns after the run's origin.
    min(g.start_ns - o.origin_ns) AS gpu_start_ns,
    -- GPU duration: from the first GPU operation's start to the last one's end, ns.
    max(g.end_ns) - min(g.start_ns) AS gpu_duration_ns,
    -- Number of GPU operations launched inside the range.
    count(*) AS gpu_ops,
    -- Sum of their durations (overlaps counted twice).
    sum(g.end_ns - g.start_ns) AS gpu_busy_ns
FROM spans AS g
JOIN span_ancestors AS a ON a.run_id = g.run_id AND a.span_id = g.span_id
JOIN spans AS r ON r.run_id = a.run_id AND r.span_id = a.ancestor_id
JOIN runs AS o ON o.run_id = r.run_id
WHERE g.kind IN ('kernel', 'memcpy', 'memset')
  AND r.kind IN ('model', 'layer', 'op', 'annotation')
GROUP BY ALL
ORDER BY r.run_id, gpu_start_ns, gpu_duration_ns DESC;
