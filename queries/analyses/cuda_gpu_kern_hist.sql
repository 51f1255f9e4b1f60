-- analyses/cuda_gpu_kern_hist: the distribution of each kernel's durations -- what `nsys recipe
-- cuda_gpu_kern_hist` plots ("the probability of the duration of a CUDA kernel among all its
-- instances"): per kernel name, its instances counted in equal-width duration bins from its
-- shortest to its longest instance, with the steps whose instances fall in each bin, so a slow
-- iteration shows as a lone bin far from the rest.
--
-- From: spans of kind 'kernel', attribution and steps (the iteration). `--set hist_bins=N` (10)
-- sets the bins per kernel; a kernel whose instances all last the same has one bin. Empty bins
-- are left out; kernels with one instance have no distribution and no rows.
--
-- title: Kernel duration histogram per kernel (nsys recipe cuda_gpu_kern_hist)
-- group: kernel
-- include:
-- columns: run_id INTEGER, name VARCHAR, bin BIGINT, bin_start_ns DOUBLE, bin_end_ns DOUBLE, instances
--     BIGINT, probability_pct DOUBLE, iterations VARCHAR
WITH kernel AS (
    SELECT s.run_id, s.name, s.end_ns - s.start_ns AS duration_ns, st.iteration
    FROM spans AS s
    LEFT JOIN attribution AS a ON a.run_id = s.run_id AND a.span_id = s.span_id
    LEFT JOIN steps AS st ON st.run_id = a.run_id AND st.step_span_id = a.step_span_id
    WHERE s.kind = 'kernel'
), ranged AS (
    SELECT *, min(duration_ns) OVER k AS low_ns, max(duration_ns) OVER k AS high_ns, count(*) OVER k AS total,
           coalesce(getvariable('xsp_hist_bins'), 10) AS bins
    FROM kernel WINDOW k AS (PARTITION BY run_id, name)
), binned AS (
    SELECT *, CASE WHEN high_ns = low_ns THEN 1
                   ELSE least(bins, 1 + floor((duration_ns - low_ns) * bins / (high_ns - low_ns))::BIGINT) END AS bin
    FROM ranged WHERE total > 1
)
SELECT
    -- Run.
    run_id,
    -- Kernel (demangled name).
    name,
    -- Bin number, 1 = shortest durations.
    bin,
    -- Bin's lower edge, ns (inclusive).
    CASE WHEN high_ns = low_ns THEN low_ns ELSE round(low_ns + (bin - 1) * (high_ns - low_ns) / bins, 1) END AS bin_start_ns,
    -- Bin's upper edge, ns (exclusive, except the last bin's, which holds the longest instance).
    CASE WHEN high_ns = low_ns THEN high_ns ELSE round(low_ns + bin * (high_ns - low_ns) / bins, 1) END AS bin_end_ns,
    -- Instances in the bin.
    count(*) AS instances,
    -- Share of the kernel's instances in the bin, percent (the histogram's probability).
    round(100.0 * count(*) / any_value(total), 2) AS probability_pct,
    -- Steps (iterations) with an instance in the bin, when at most 8 do; NULL when more or none.
    CASE WHEN count(DISTINCT iteration) BETWEEN 1 AND 8
         THEN array_to_string(list_sort(list(DISTINCT iteration)), ',') END AS iterations
FROM binned
GROUP BY run_id, name, bin, low_ns, high_ns, bins
ORDER BY run_id, name, bin;
