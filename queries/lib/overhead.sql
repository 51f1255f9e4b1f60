-- lib/overhead: the profiling overhead each capture level adds, per run, with seeded bootstrap
-- 95 % intervals.
-- include: lib/stats, lib/experiments
--
-- From: capture_latencies (the un-instrumented and instrumented loops of each capture), the
-- inferences (lib/experiments). Variables: xsp_bootstrap_resamples (default 1000),
-- xsp_bootstrap_seed (default 0).

-- Overhead of each level, per run, against the un-instrumented loop of that run's OWN process
-- (capture_latencies): un-instrumented baselines differ between processes by more than the
-- overheads, so only an in-process comparison is the overhead (docs/design.md). Per run:
-- the plain-timer instrumented vs un-instrumented trimmed means (the figure of
-- queries/analyses/capture_level_overhead.sql) and the run's model ranges vs its un-instrumented loop,
-- each with a seeded percentile-bootstrap 95 % interval: xsp_bootstrap_resamples resamples
-- (default 1000) of the iterations, drawn by hash(xsp_bootstrap_seed (default 0), run, resample,
-- draw) so the interval is reproducible; paired by iteration where the loops alternate
-- (phase 'interleaved'), drawn apart otherwise. A run without capture_latencies has NULLs there.
CREATE OR REPLACE TEMP VIEW _xsp_level_loops AS
WITH loops AS (
    SELECT run_id,
           list(latency_ns ORDER BY iteration) FILTER (WHERE loop = 'uninstrumented') AS plain,
           list(latency_ns ORDER BY iteration) FILTER (WHERE loop = 'instrumented') AS timed,
           coalesce(bool_and(phase = 'interleaved') FILTER (WHERE loop = 'uninstrumented'), FALSE) AS interleaved
    FROM capture_latencies
    GROUP BY run_id
), ranges AS (
    SELECT run_id, list(end_ns - start_ns ORDER BY iteration, start_ns) AS model
    FROM xsp_inferences
    GROUP BY run_id
)
SELECT r.run_id, r.experiment, r.level, r.tool, l.plain, l.timed, l.interleaved, m.model
FROM xsp_runs AS r
LEFT JOIN loops AS l USING (run_id)
LEFT JOIN ranges AS m USING (run_id)
WHERE r.level IN ('M', 'ML', 'MLG');

CREATE OR REPLACE TEMP VIEW _xsp_level_bootstrap AS
WITH draws AS (
    SELECT l.run_id, b.resample, j.draw,
           -- draw j of resample b: one hash per (seed, run, resample, draw); a second one for the
           -- instrumented side unless the loops alternate (then iteration i of both is drawn together)
           hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw) AS h_plain,
           CASE WHEN l.interleaved THEN hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw)
                ELSE hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw, 'instrumented') END AS h_timed,
           l.plain, l.timed, l.model
    FROM _xsp_level_loops AS l
    CROSS JOIN (SELECT range AS resample FROM range(CAST(coalesce(getvariable('xsp_bootstrap_resamples'), 1000) AS BIGINT))) AS b
    CROSS JOIN LATERAL (SELECT unnest(range(CAST(greatest(len(l.plain), len(l.timed), coalesce(len(l.model), 0)) AS BIGINT))) AS draw) AS j
    WHERE len(l.plain) > 0 AND len(l.timed) > 0
), resampled AS (
    SELECT run_id, resample,
           xsp_trimmed_mean(list(plain[CAST(h_plain % len(plain) AS BIGINT) + 1]) FILTER (WHERE draw < len(plain))) AS plain_ns,
           xsp_trimmed_mean(list(timed[CAST(h_timed % len(timed) AS BIGINT) + 1]) FILTER (WHERE draw < len(timed))) AS timed_ns,
           xsp_trimmed_mean(list(model[CAST(h_timed % len(model) AS BIGINT) + 1]) FILTER (WHERE draw < len(model))) AS model_ns
    FROM draws
    GROUP BY run_id, resample
)
SELECT run_id,
       quantile_cont(100.0 * (timed_ns - plain_ns) / plain_ns, 0.025) AS overhead_pct_low,
       quantile_cont(100.0 * (timed_ns - plain_ns) / plain_ns, 0.975) AS overhead_pct_high,
       quantile_cont(100.0 * (model_ns - plain_ns) / plain_ns, 0.025) AS model_overhead_pct_low,
       quantile_cont(100.0 * (model_ns - plain_ns) / plain_ns, 0.975) AS model_overhead_pct_high
FROM resampled
GROUP BY run_id;

CREATE OR REPLACE TEMP VIEW xsp_level_overhead AS
WITH per_run AS (
    SELECT l.run_id, l.experiment, l.level, l.tool, l.interleaved,
           CASE l.level WHEN 'M' THEN 1 WHEN 'ML' THEN 2 ELSE 3 END AS rank,
           len(l.model) AS samples,
           xsp_trimmed_mean(l.plain) AS uninstrumented_ns,
           xsp_trimmed_mean(l.timed) AS instrumented_ns,
           xsp_trimmed_mean(l.model) AS model_ns
    FROM _xsp_level_loops AS l
)
SELECT
    -- The experiment.
    p.experiment,
    -- Capture level: M, ML or MLG.
    p.level,
    -- Profiler.
    p.tool,
    -- Run.
    p.run_id,
    -- Model ranges (inferences) measured.
    p.samples,
    -- Whether the instrumented and un-instrumented loops alternated (paired bootstrap).
    p.interleaved,
    -- Trimmed mean of the un-instrumented loop, ns.
    p.uninstrumented_ns,
    -- Trimmed mean of the instrumented loop (plain timer), ns.
    p.instrumented_ns,
    -- Trimmed mean of the run's model ranges, ns.
    p.model_ns,
    -- Overhead of the level: instrumented - un-instrumented, ns.
    p.instrumented_ns - p.uninstrumented_ns AS overhead_ns,
    -- The same in % of the un-instrumented loop.
    100.0 * (p.instrumented_ns - p.uninstrumented_ns) / p.uninstrumented_ns AS overhead_pct,
    -- Its bootstrap 95 % interval, low end, %.
    b.overhead_pct_low,
    -- High end, %.
    b.overhead_pct_high,
    -- Model ranges vs the un-instrumented loop, %.
    100.0 * (p.model_ns - p.uninstrumented_ns) / p.uninstrumented_ns AS model_overhead_pct,
    -- Its bootstrap 95 % interval, low end, %.
    b.model_overhead_pct_low,
    -- High end, %.
    b.model_overhead_pct_high,
    -- The previous level of the experiment (another process: not an overhead figure).
    lag(p.level) OVER w AS cross_process_previous_level,
    -- Model latency vs that level's, % (across processes).
    100.0 * (p.model_ns - lag(p.model_ns) OVER w) / lag(p.model_ns) OVER w AS cross_process_overhead_pct
FROM per_run AS p
LEFT JOIN _xsp_level_bootstrap AS b USING (run_id)
WINDOW w AS (PARTITION BY p.experiment, p.tool ORDER BY p.rank, p.run_id);
