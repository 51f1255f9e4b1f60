-- analyses/gpu_utilization_bins: each GPU's busy share over time, in equal bins from its first to
-- its last operation (like `nsys analyze gpu-low-util` and HTA's temporal breakdown over time):
-- where a run went through low-utilisation phases.
--
-- From: xsp_gpu_busy_intervals (prelude: union of kernels, copies and sets per GPU, all streams),
-- runs (origin_ns: the bin edges shown are relative to it).
-- Bins: the variable xsp_bins per GPU (default 50) of equal width, the last one ending at the last
-- operation's end.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts with include_last_profiler_step=True (its default also drops
-- the work launched in the last step; lib/scope.sql says which work is left out).
--
-- title: GPU utilisation over time
-- group: gpu
-- include: lib/busy
-- columns: run_id INTEGER, device_id INTEGER, bin BIGINT, bin_start_ns BIGINT, bin_end_ns BIGINT,
--     busy_ns BIGINT, busy_pct DOUBLE
WITH windows AS (
    SELECT run_id, device_id, min(start_ns) AS first_ns, max(end_ns) AS last_ns,
           CAST(coalesce(getvariable('xsp_bins'), 50) AS BIGINT) AS bins
    FROM xsp_gpu_busy_intervals GROUP BY run_id, device_id
), bin_edges AS (
    SELECT w.run_id, w.device_id, b.i AS bin,
           w.first_ns + (w.last_ns - w.first_ns) * b.i // w.bins AS bin_start_ns,
           w.first_ns + (w.last_ns - w.first_ns) * (b.i + 1) // w.bins AS bin_end_ns
    FROM windows AS w, LATERAL (SELECT unnest(range(w.bins)) AS i) AS b
), clipped AS (
    -- Each busy interval's part inside each bin it touches. An inner join: a bin no interval
    -- touches gets no row here (DuckDB's least/greatest skip NULLs, so clipping the NULLs of an
    -- outer join would give such a bin its full width), and counts 0 below.
    SELECT e.run_id, e.device_id, e.bin,
           least(i.end_ns, e.bin_end_ns) - greatest(i.start_ns, e.bin_start_ns) AS inside_ns
    FROM bin_edges AS e
    JOIN xsp_gpu_busy_intervals AS i
        ON i.run_id = e.run_id AND i.device_id = e.device_id AND i.start_ns < e.bin_end_ns AND i.end_ns > e.bin_start_ns
), per_bin AS (
    SELECT run_id, device_id, bin, sum(inside_ns) AS busy_ns FROM clipped GROUP BY run_id, device_id, bin
)
SELECT
    -- Run.
    e.run_id,
    -- The GPU.
    e.device_id,
    -- Bin number (0 = first).
    e.bin,
    -- Start of the bin, ns after the run's origin (runs.origin_ns).
    e.bin_start_ns - r.origin_ns AS bin_start_ns,
    -- End of the bin, ns after the run's origin (start of the next one).
    e.bin_end_ns - r.origin_ns AS bin_end_ns,
    -- GPU busy time inside the bin (work of the scope), ns (0 for a bin with no GPU work); the bins of a GPU add up
    -- to gpu_busy_idle's busy_ns.
    CAST(coalesce(p.busy_ns, 0) AS BIGINT) AS busy_ns,
    -- GPU busy time as a percent of the bin's width.
    round(100.0 * coalesce(p.busy_ns, 0) / nullif(e.bin_end_ns - e.bin_start_ns, 0), 2) AS busy_pct
FROM bin_edges AS e
LEFT JOIN per_bin AS p USING (run_id, device_id, bin)
JOIN runs AS r ON r.run_id = e.run_id
ORDER BY e.run_id, e.device_id, e.bin;
