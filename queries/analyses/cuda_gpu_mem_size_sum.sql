-- analyses/cuda_gpu_mem_size_sum: bytes moved by memory copies and sets per operation and run --
-- what `nsys stats --report cuda_gpu_mem_size_sum` (nsys 2022.4: gpumemsizesum) prints, in bytes
-- (nsys prints MB = 1e6 bytes unless given --format csv:mem=B).
--
-- From: memops alone (one row per memcpy / memset span: kind, copy_kind, bytes; an analysis session
-- narrowed to a window or iterations narrows memops with its spans); operation names as nsys
-- writes them (the prelude's xsp_memop_operation), one per (kind, copy_kind), so the statistics
-- are taken per (kind, copy_kind) and named after. Statistics as nsys computes them: median of an
-- even count = mean of the two middle values, sample standard deviation (not rounded, as nsys).
--
-- title: GPU memory operations by size (nsys stats cuda_gpu_mem_size_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, total_bytes HUGEINT, count BIGINT, avg_bytes DOUBLE, med_bytes DOUBLE,
--     min_bytes BIGINT, max_bytes BIGINT, stddev_bytes DOUBLE, operation VARCHAR
WITH per_kind AS (
    SELECT run_id, kind, copy_kind, sum(bytes) AS total_bytes, count(*) AS count, avg(bytes) AS avg_bytes,
           median(bytes) AS med_bytes, min(bytes) AS min_bytes, max(bytes) AS max_bytes,
           coalesce(stddev_samp(bytes), 0) AS stddev_bytes
    FROM memops
    GROUP BY run_id, kind, copy_kind
)
SELECT
    -- Run of the operations.
    p.run_id,
    -- Summed bytes.
    p.total_bytes,
    -- Number of operations.
    p.count,
    -- Mean size per operation, bytes (not rounded, as nsys).
    p.avg_bytes,
    -- Median size, bytes (an even count: mean of the two middle values).
    p.med_bytes,
    -- Smallest operation, bytes.
    p.min_bytes,
    -- Largest operation, bytes.
    p.max_bytes,
    -- Sample standard deviation of the sizes, bytes (0 for a single operation).
    p.stddev_bytes,
    -- "[CUDA memcpy HtoD]", "[CUDA memset]", ...
    xsp_memop_operation(p.kind, p.copy_kind) AS operation
FROM per_kind AS p
ORDER BY run_id, total_bytes DESC, operation;
