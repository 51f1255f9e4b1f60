-- lib/nsys_stats: what the `nsys stats` summaries share -- memory-operation names, SQLite's
-- rounding, and the duration summary of the time reports (xsp_nsys_summary).
-- include:
--
-- From: spans, kernels, memops, the TEMP table xsp_memop_operations and the rounding facts (variables), both from
-- xsp_trace/formats/nsys_stats.py and xsp_trace/formats/nsys_export.py.

-- The name nsys 2022.4 gives the memory operations of (kind, copy_kind) in its memory reports
-- (xsp_memop_operations, loaded from xsp_trace/formats/nsys_stats.py), or "[kind copy_kind]" for
-- a pair it has no name for. One name per pair. Read by xsp_nsys_summary and
-- analyses/cuda_gpu_mem_size_sum.sql.
CREATE OR REPLACE TEMP MACRO xsp_memop_operation(op_kind, op_copy_kind) AS coalesce(
    (SELECT o.operation FROM xsp_memop_operations AS o WHERE o.kind = op_kind AND o.copy_kind IS NOT DISTINCT FROM op_copy_kind),
    '[' || op_kind || ' ' || coalesce(op_copy_kind, '?') || ']'
);

-- x rounded to 1 decimal as `nsys stats` prints it: SQLite's round(x, 1), which adds 0.05 and a
-- nudge of x * 3e-16, then truncates (xsp_trace/formats/nsys_stats.py), so exact .x5 ties and
-- doubles just below them round up (DuckDB's round(x, 1) rounds 1234.45, stored as 1234.4499..., down).
-- Read by the nsys-stats summaries (analyses/cuda_*_sum.sql, nvtx_sum, osrt_sum, kernel_launch_stats).
CREATE OR REPLACE TEMP MACRO xsp_nsys_round(x) AS CASE
    WHEN abs(x) >= getvariable('xsp_sqlite_round_whole_from') THEN x
    -- whole part and fraction apart, both exact, so the nudge is not lost in the whole part's ulp;
    -- the rounder 0.05 + nudge is a double, as SQLite keeps it
    ELSE sign(x) * (floor(abs(x)) * 10 + floor((abs(x) - floor(abs(x))
              + (CAST(0.05 AS DOUBLE) + CASE WHEN abs(x) < getvariable('xsp_sqlite_round_nudge_below')
                                             THEN abs(x) * getvariable('xsp_sqlite_round_nudge') ELSE 0 END)) * 10)) / 10
END;
-- part's share of whole in percent, computed and rounded as `nsys stats` does (part * 100.0 / whole).
CREATE OR REPLACE TEMP MACRO xsp_nsys_pct(part, whole) AS
    xsp_nsys_round(CAST(part AS DOUBLE) * CAST(100 AS DOUBLE) / CAST(whole AS DOUBLE));

-- The duration summary the `nsys stats` time reports share, one row per run and key: the summed,
-- mean, median, shortest, longest and sample-deviation durations as nsys computes and rounds them
-- (xsp_nsys_round), and the key's share of the run's summed time (xsp_nsys_pct). `report` picks the
-- rows and their key: 'cuda_api_sum' (API calls by name), 'osrt_sum' (OS runtime calls by name),
-- 'cuda_gpu_kern_sum' (kernels by name), 'cuda_gpu_kern_gb_sum' (kernels by name, grid and
-- block), 'nvtx_sum' (NVTX ranges by name and range_style, in style), 'cuda_gpu_mem_time_sum' (copies and sets by
-- kind and copy kind, named by xsp_memop_operation). A table macro: the report name is a constant,
-- so every branch but its own is planned away and its scan keeps a plain kind filter.
CREATE OR REPLACE TEMP MACRO xsp_nsys_summary(report) AS TABLE
WITH durations AS (
    SELECT run_id, name, CAST(NULL AS VARCHAR) AS grid, CAST(NULL AS VARCHAR) AS block, CAST(NULL AS VARCHAR) AS style,
           CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS copy_kind, end_ns - start_ns AS duration_ns
    FROM spans WHERE report = 'cuda_api_sum' AND kind = 'api'
    UNION ALL
    SELECT run_id, name, NULL, NULL, NULL, NULL, NULL, end_ns - start_ns
    FROM spans WHERE report = 'osrt_sum' AND kind = 'other' AND category = getvariable('xsp_osrt_category')
    UNION ALL
    SELECT run_id, name, NULL, NULL, NULL, NULL, NULL, end_ns - start_ns
    FROM spans WHERE report = 'cuda_gpu_kern_sum' AND kind = 'kernel'
    UNION ALL
    SELECT s.run_id, s.name, printf('%4d %4d %4d', k.grid_x, k.grid_y, k.grid_z), printf('%4d %4d %4d', k.block_x, k.block_y, k.block_z),
           NULL, NULL, NULL, s.end_ns - s.start_ns
    FROM spans AS s
    LEFT JOIN kernels AS k ON k.run_id = s.run_id AND k.span_id = s.span_id
    WHERE report = 'cuda_gpu_kern_gb_sum' AND s.kind = 'kernel'
    UNION ALL
    SELECT run_id, CASE WHEN category IS NULL THEN name ELSE category || ':' || name END, NULL, NULL,
           range_style, NULL, NULL, end_ns - start_ns
    FROM spans WHERE report = 'nvtx_sum' AND range_style IS NOT NULL
    UNION ALL
    SELECT run_id, NULL, NULL, NULL, NULL, kind, copy_kind, duration_ns
    FROM memops WHERE report = 'cuda_gpu_mem_time_sum'
), summary AS MATERIALIZED (
    SELECT run_id, name, grid, block, style, kind, copy_kind, sum(duration_ns) AS total_ns, count(*) AS count,
           avg(duration_ns) AS avg_ns, median(duration_ns) AS med_ns, min(duration_ns) AS min_ns,
           max(duration_ns) AS max_ns, coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM durations
    GROUP BY run_id, name, grid, block, style, kind, copy_kind
)
SELECT run_id, xsp_nsys_pct(total_ns, sum(total_ns) OVER (PARTITION BY run_id)) AS time_pct, total_ns, count,
       xsp_nsys_round(avg_ns) AS avg_ns, xsp_nsys_round(med_ns) AS med_ns, min_ns, max_ns, xsp_nsys_round(stddev_ns) AS stddev_ns,
       coalesce(name, xsp_memop_operation(kind, copy_kind)) AS name, grid, block, style
FROM summary;
