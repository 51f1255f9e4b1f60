-- analyses/gpu_low_utilization: time regions where a GPU was busy less than
-- xsp_rule_threshold_pct (default 50 %) of the time -- nsys analyze's gpu-low-util rule, lowest
-- first, at most xsp_rule_rows per run.
--
-- From: runs (origin_ns: start_ns is shown relative to it), xsp_rules_gpu_ops (prelude_rules: kernels, copies and sets in the window). As nsys: per
-- run, process and GPU, the span from its first GPU work's start to its last one's end is cut
-- into xsp_rule_chunks (default 30) chunks of ceil(span / chunks) ns (the last one clipped);
-- a chunk's use is the summed overlap of the work with it over its length (concurrent work adds
-- up, so it may pass 100 %); consecutive chunks below the threshold merge into one region whose
-- use is their length-weighted mean. nsys also counts its own "CUDA profiling overhead" rows as
-- GPU work; the schema does not keep them.
--
-- title: Regions of low GPU use (nsys analyze gpu-low-util)
-- group: rules
-- include: lib/rules
-- columns: run_id INTEGER, row_num BIGINT, in_use_pct DOUBLE, duration_ns BIGINT, start_ns BIGINT,
--     pid BIGINT, device_id INTEGER
WITH ops AS (
    SELECT * FROM xsp_rules_gpu_ops
), extent AS (
    SELECT run_id, pid, device_id, min(start_ns) AS first_start_ns, max(end_ns) AS last_end_ns,
           -- nsys's ceil of a REAL division; the boundaries below stay integers, exact on any clock
           -- (a Kineto clock's epoch nanoseconds are past a double's 2^53).
           CAST(ceil(CAST(max(end_ns) - min(start_ns) AS DOUBLE) / (SELECT chunks FROM xsp_rules_settings)) AS BIGINT) AS chunk_ns
    FROM ops
    GROUP BY run_id, pid, device_id
), chunk AS (
    SELECT x.run_id, x.pid, x.device_id, c.ordinal,
           c.ordinal * x.chunk_ns + x.first_start_ns AS chunk_start,
           least(c.ordinal * x.chunk_ns + x.first_start_ns + x.chunk_ns, x.last_end_ns) AS chunk_end
    FROM extent AS x
    CROSS JOIN (SELECT range AS ordinal FROM range((SELECT chunks FROM xsp_rules_settings))) AS c
    WHERE c.ordinal * x.chunk_ns + x.first_start_ns < least(c.ordinal * x.chunk_ns + x.first_start_ns + x.chunk_ns, x.last_end_ns)
), used AS (
    -- The overlap of each piece of work with the chunk; a chunk without work uses 0 (a CASE, not
    -- least/greatest, which would skip the NULLs of an unmatched row).
    SELECT c.run_id, c.pid, c.device_id, c.ordinal, c.chunk_start, c.chunk_end,
           CAST(sum(CASE WHEN o.span_id IS NULL THEN 0
                         ELSE least(o.end_ns, c.chunk_end) - greatest(o.start_ns, c.chunk_start) END) AS DOUBLE)
               / (c.chunk_end - c.chunk_start) * 100 AS use_pct
    FROM chunk AS c
    LEFT JOIN ops AS o ON o.run_id = c.run_id AND o.pid = c.pid AND o.device_id = c.device_id
                      AND o.start_ns < c.chunk_end AND o.end_ns > c.chunk_start
    GROUP BY c.run_id, c.pid, c.device_id, c.ordinal, c.chunk_start, c.chunk_end
    HAVING use_pct < (SELECT threshold_pct FROM xsp_rules_settings)
), grouped AS (
    SELECT *, ordinal - row_number() OVER (PARTITION BY run_id, pid, device_id ORDER BY ordinal) AS region
    FROM used
), regions AS (
    SELECT run_id, pid, device_id, min(chunk_start) AS region_start, max(chunk_end) - min(chunk_start) AS region_ns,
           round(sum((chunk_end - chunk_start) * use_pct) / CAST(sum(chunk_end - chunk_start) AS DOUBLE), 1) AS in_use_pct
    FROM grouped
    GROUP BY run_id, pid, device_id, region
)
SELECT
    -- Run.
    run_id,
    -- Rank of the region in its run, least used first (nsys's Row#).
    row_number() OVER (PARTITION BY run_id ORDER BY in_use_pct, region_ns, region_start, pid, device_id) AS row_num,
    -- Share of the region's time the GPU was in use, % (one decimal, as nsys rounds it).
    in_use_pct,
    -- Length of the region, ns.
    region_ns AS duration_ns,
    -- Start of the region, ns after the run's origin (runs.origin_ns).
    region_start - r.origin_ns AS start_ns,
    -- Process whose GPU work was measured.
    pid,
    -- GPU (CUDA device ordinal).
    device_id
FROM regions
JOIN runs AS r USING (run_id)
QUALIFY row_num <= (SELECT row_limit FROM xsp_rules_settings)
ORDER BY run_id, row_num;
