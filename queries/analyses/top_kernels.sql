-- analyses/top_kernels: GPU time per kernel name and run, largest first (what `nsys stats --report
-- gpukernsum` and HTA's kernel breakdown show).
--
-- From: spans of kind 'kernel'.
-- Run by hand: duckdb run.duckdb < queries/analyses/top_kernels.sql, or xsp-trace query run.duckdb @queries/analyses/top_kernels.sql
--
-- title: Top kernels by name (every run, uncorrected)
-- group: kernel
-- include:
-- columns: run_id INTEGER, name VARCHAR, instances BIGINT, total_ns HUGEINT, time_pct DOUBLE, avg_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT
SELECT
    -- Run the kernels belong to.
    run_id,
    -- Demangled kernel name.
    name,
    -- Number of executions.
    count(*) AS instances,
    -- Total GPU time, ns.
    sum(end_ns - start_ns) AS total_ns,
    -- Share of the run's total kernel time, percent.
    round(100.0 * sum(end_ns - start_ns) / sum(sum(end_ns - start_ns)) OVER (PARTITION BY run_id), 1) AS time_pct,
    -- Mean, shortest and longest execution, ns.
    round(avg(end_ns - start_ns), 1) AS avg_ns,
    -- Shortest instance, ns.
    min(end_ns - start_ns) AS min_ns,
    -- Longest instance, ns.
    max(end_ns - start_ns) AS max_ns
FROM spans
WHERE kind = 'kernel'
GROUP BY run_id, name
ORDER BY run_id, total_ns DESC;
