-- lib/nsys_stats: what the `nsys stats` summaries share -- memory-operation names, SQLite's
-- rounding, and per-function call statistics.
-- include:
--
-- From: spans, the TEMP table xsp_memop_operations and the rounding facts (variables), both from
-- xsp_trace/formats/nsys_stats.py and xsp_trace/formats/nsys_export.py.

-- The name nsys 2022.4 gives the memory operations of (kind, copy_kind) in its memory reports
-- (xsp_memop_operations, loaded from xsp_trace/formats/nsys_stats.py), or "[kind copy_kind]" for
-- a pair it has no name for. One name per pair. Read by analyses/cuda_gpu_mem_time_sum.sql and
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

-- Duration statistics of CPU calls per run and function, as `nsys stats` computes them (median of an
-- even count = mean of the two middle values; sample standard deviation), of the spans of one kind
-- and, where `wanted_category` is not NULL, one category: ('api', NULL) for CUDA/HIP API calls,
-- ('other', the OS runtime category from xsp_trace/formats/nsys_export.py) for OS runtime calls.
-- Read by analyses/cuda_api_sum.sql and analyses/osrt_sum.sql. A table macro, not a view over
-- both families: the plain kind filter lets the scan skip the row groups of other kinds.
CREATE OR REPLACE TEMP MACRO xsp_call_stats(wanted_kind, wanted_category) AS TABLE
SELECT run_id, name, sum(end_ns - start_ns) AS total_ns, count(*) AS calls, avg(end_ns - start_ns) AS avg_ns,
       median(end_ns - start_ns) AS med_ns, min(end_ns - start_ns) AS min_ns, max(end_ns - start_ns) AS max_ns,
       coalesce(stddev_samp(end_ns - start_ns), 0) AS stddev_ns
FROM spans
WHERE kind = wanted_kind AND (wanted_category IS NULL OR category = wanted_category)
GROUP BY run_id, name;
