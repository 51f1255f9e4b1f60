-- analyses/capture_level_overhead: what profiling each level costs, per captured run.
--
-- From: capture_latencies (plain-timer latency of every inference, instrumented and not, of
-- each run of a capture run directory) and capture_runs (tool, level, batch size of the run).
-- The un-instrumented loop runs in the same process, half before and half after the
-- instrumented one, so the difference is the overhead of that level's ranges and profiler.
-- Statistics as XSP's authors: trimmed mean (cut int(0.2 n) inferences from each end, as
-- scipy.stats.trim_mean(x, 0.2)), plus median and p90.
--
-- include:
-- columns: run_id INTEGER, tool VARCHAR, level VARCHAR, batch_size INTEGER, iterations BIGINT,
--     uninstrumented_trimmed_mean_ns DOUBLE, instrumented_trimmed_mean_ns DOUBLE, overhead_ns DOUBLE,
--     inflation_pct DOUBLE, uninstrumented_median_ns DOUBLE, instrumented_median_ns DOUBLE,
--     uninstrumented_p90_ns DOUBLE, instrumented_p90_ns DOUBLE, program_changed BOOLEAN

WITH ranked AS (
    SELECT run_id, loop, latency_ns,
           row_number() OVER (PARTITION BY run_id, loop ORDER BY latency_ns) AS position,
           count(*) OVER (PARTITION BY run_id, loop) AS n
    FROM capture_latencies
),
per_loop AS (
    SELECT run_id, loop, any_value(n) AS n,
           avg(latency_ns) FILTER (WHERE position > floor(0.2 * n) AND position <= n - floor(0.2 * n)) AS trimmed_mean_ns,
           median(latency_ns) AS median_ns,
           quantile_cont(latency_ns, 0.9) AS p90_ns
    FROM ranked
    GROUP BY run_id, loop
)
SELECT
    -- the run (runs.run_id)
    c.run_id,
    -- the tool that recorded it (torch, nsys)
    c.tool,
    -- the level it profiled (M, ML, MLG)
    c.level,
    -- batch size of its inputs
    c.batch_size,
    -- inferences in each loop
    i.n AS iterations,
    -- trimmed mean latency without any instrumentation, ns
    u.trimmed_mean_ns AS uninstrumented_trimmed_mean_ns,
    -- trimmed mean latency with this level's ranges and profiler, ns
    i.trimmed_mean_ns AS instrumented_trimmed_mean_ns,
    -- overhead of the level: instrumented - un-instrumented trimmed mean, ns
    i.trimmed_mean_ns - u.trimmed_mean_ns AS overhead_ns,
    -- the same as a share of the un-instrumented latency, percent
    100.0 * (i.trimmed_mean_ns - u.trimmed_mean_ns) / u.trimmed_mean_ns AS inflation_pct,
    -- median latency without instrumentation, ns
    u.median_ns AS uninstrumented_median_ns,
    -- median latency with it, ns
    i.median_ns AS instrumented_median_ns,
    -- 90th percentile without instrumentation, ns
    u.p90_ns AS uninstrumented_p90_ns,
    -- 90th percentile with it, ns
    i.p90_ns AS instrumented_p90_ns,
    -- whether layer hooks changed the ops the model runs (then the layer run measures another program)
    c.program_changed
FROM capture_runs c
JOIN per_loop u ON u.run_id = c.run_id AND u.loop = 'uninstrumented'
JOIN per_loop i ON i.run_id = c.run_id AND i.loop = 'instrumented'
ORDER BY c.batch_size, c.tool, c.level;
