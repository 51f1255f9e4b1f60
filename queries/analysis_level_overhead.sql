-- analysis_level_overhead: what profiling each level costs -- model latency with the level
-- profiled minus without it (M vs the un-instrumented loop, ML vs M, MLG vs ML).
--
-- From: the prelude's xsp_level_overhead (model ranges of every leveled run; the capture's
-- plain-timer un-instrumented loop in capture_latencies as level "none").
SELECT
    -- Experiment: "<model> bs=<batch size>".
    experiment,
    -- Level profiled in the run: none (un-instrumented loop), M, ML or MLG.
    level,
    -- Inferences measured.
    samples,
    -- Trimmed-mean model latency in that run, ms.
    round(model_ns / 1e6, 6) AS model_latency_ms,
    -- The run it is compared with (the next lower level present).
    previous_level,
    -- Overhead of profiling this level: latency here - latency in the previous level's run, ms and %.
    round(overhead_ns / 1e6, 6) AS overhead_ms,
    -- The same overhead as a share of the previous level's latency, percent.
    round(overhead_pct, 2) AS overhead_pct
FROM xsp_level_overhead
ORDER BY experiment, CASE level WHEN 'none' THEN 0 WHEN 'M' THEN 1 WHEN 'ML' THEN 2 ELSE 3 END;
