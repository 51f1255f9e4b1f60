-- analyses/level_overhead: what profiling each level costs, per run, measured against that run's
-- OWN un-instrumented inferences (same process, timed with the same plain timer, alternating
-- with the instrumented ones under the torch and nsys tools) -- with a bootstrap interval.
--
-- From: the prelude's xsp_level_overhead (capture_latencies of each leveled run: its
-- instrumented and un-instrumented loops; the run's model ranges). The in-process overhead equals
-- queries/analyses/capture_level_overhead.sql's inflation; the cross-process column compares model ranges
-- of two processes and is only indicative (process baselines differ by more than the overheads).
--
-- title: Profiling overhead of each level
-- group: model
-- include: lib/overhead
-- columns: experiment VARCHAR, level VARCHAR, tool VARCHAR, run_id INTEGER, samples BIGINT,
--     interleaved BOOLEAN, uninstrumented_ms DOUBLE, instrumented_ms DOUBLE, overhead_ms DOUBLE,
--     overhead_pct DOUBLE, overhead_pct_low DOUBLE, overhead_pct_high DOUBLE, model_latency_ms DOUBLE,
--     model_overhead_pct DOUBLE, model_overhead_pct_low DOUBLE, model_overhead_pct_high DOUBLE,
--     cross_process_previous_level VARCHAR, cross_process_overhead_pct DOUBLE
SELECT
    -- Experiment: "<model> bs=<batch size>".
    experiment,
    -- Level profiled in the run (M, ML, MLG) and the tool that recorded it.
    level,
    -- Tool that recorded the run (torch, nsys).
    tool,
    -- The run (runs.run_id).
    run_id,
    -- Inferences (model ranges) in the run's trace.
    samples,
    -- Whether un-instrumented and instrumented inferences alternated (else: before and after).
    interleaved,
    -- Trimmed-mean latency of the run's own un-instrumented inferences (plain timer), ms.
    round(uninstrumented_ns / 1e6, 6) AS uninstrumented_ms,
    -- Trimmed-mean latency of its instrumented inferences (same plain timer), ms.
    round(instrumented_ns / 1e6, 6) AS instrumented_ms,
    -- Overhead of the level, in process: instrumented - un-instrumented, ms and %.
    round(overhead_ns / 1e6, 6) AS overhead_ms,
    -- The same overhead as a share of the un-instrumented latency, %.
    round(overhead_pct, 2) AS overhead_pct,
    -- Lower end of the 95 % seeded bootstrap interval of overhead_pct.
    round(overhead_pct_low, 2) AS overhead_pct_low,
    -- Upper end of that interval.
    round(overhead_pct_high, 2) AS overhead_pct_high,
    -- Trimmed-mean model range latency in the trace, ms (for M: the model latency analyses report).
    round(model_ns / 1e6, 6) AS model_latency_ms,
    -- Model ranges vs the run's own un-instrumented inferences, % (for M: the error of the
    -- corrected model latency; 0 is right), and its 95 % bootstrap interval.
    round(model_overhead_pct, 2) AS model_overhead_pct,
    -- Lower end of its 95 % bootstrap interval.
    round(model_overhead_pct_low, 2) AS model_overhead_pct_low,
    -- Upper end of its 95 % bootstrap interval.
    round(model_overhead_pct_high, 2) AS model_overhead_pct_high,
    -- CROSS-PROCESS (indicative only): model ranges here vs the run of the next lower level, %.
    cross_process_previous_level,
    -- CROSS-PROCESS (indicative only): the model-range overhead against that run, %.
    round(cross_process_overhead_pct, 2) AS cross_process_overhead_pct
FROM xsp_level_overhead
ORDER BY experiment, tool, CASE level WHEN 'M' THEN 1 WHEN 'ML' THEN 2 ELSE 3 END, run_id;
