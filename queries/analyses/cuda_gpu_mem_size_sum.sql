-- analyses/cuda_gpu_mem_size_sum: bytes moved by memory copies and sets per operation and run --
-- what `nsys stats --report cuda_gpu_mem_size_sum` (nsys 2022.4: gpumemsizesum) prints, in bytes
-- (nsys prints MB = 1e6 bytes unless given --format csv:mem=B).
--
-- From: spans of kind memcpy / memset with memops (copy_kind, bytes); operation names as in
-- analysis_cuda_gpu_mem_time_sum. Statistics as nsys computes them: median of an even count = mean
-- of the two middle values, sample standard deviation (not rounded, as nsys).
WITH ops AS (
    SELECT s.run_id, coalesce(o.operation, '[' || s.kind || ' ' || coalesce(m.copy_kind, '?') || ']') AS operation,
           m.bytes
    FROM spans AS s
    JOIN memops AS m ON m.run_id = s.run_id AND m.span_id = s.span_id
    LEFT JOIN _xsp_memop_operations AS o ON o.kind = s.kind AND o.copy_kind IS NOT DISTINCT FROM m.copy_kind
    WHERE s.kind IN ('memcpy', 'memset')
)
SELECT
    -- Run of the operations.
    run_id,
    -- Summed bytes.
    sum(bytes) AS total_bytes,
    -- Number of operations.
    count(*) AS count,
    -- Mean size per operation, bytes (not rounded, as nsys).
    avg(bytes) AS avg_bytes,
    -- Median size, bytes (an even count: mean of the two middle values).
    median(bytes) AS med_bytes,
    -- Smallest operation, bytes.
    min(bytes) AS min_bytes,
    -- Largest operation, bytes.
    max(bytes) AS max_bytes,
    -- Sample standard deviation of the sizes, bytes (0 for a single operation).
    coalesce(stddev_samp(bytes), 0) AS stddev_bytes,
    -- "[CUDA memcpy HtoD]", "[CUDA memset]", ...
    operation
FROM ops
GROUP BY run_id, operation
ORDER BY run_id, total_bytes DESC, operation;
