-- analyses/level_sources: where each level's numbers come from, and whether they are corrected.
--
-- From: xsp_level_sources (queries/lib/experiments.sql).
-- Leveled measurement takes model latency from the M run, layer latency from the ML run and
-- kernel latency from the MLG run; when a level's own run is missing (or the database holds a
-- plain nsys/torch trace) the next run up serves it and its numbers include profiling overhead.
--
-- title: Where each level's numbers come from
-- group: model
-- include: lib/experiments
-- columns: experiment VARCHAR, measured VARCHAR, source_level VARCHAR, corrected BOOLEAN, run_ids INTEGER[],
--     inferences BIGINT, note VARCHAR
SELECT
    -- Experiment: "<model> bs=<batch size>" for leveled runs, "run <id>" for a plain trace.
    experiment,
    -- Measured level: model, layer or kernel.
    measured,
    -- Run level the numbers come from (M, ML, MLG; NULL = a plain trace).
    level AS source_level,
    -- True when measured without the overhead of profiling the levels below it.
    corrected,
    -- The runs used.
    run_ids,
    -- Inferences (model ranges or iterations) in those runs; 1 when the trace has none.
    inferences,
    -- In words, for uncorrected levels.
    CASE WHEN corrected THEN NULL
         WHEN level IS NULL THEN 'uncorrected: plain trace, includes the overhead of profiling every level below'
         ELSE 'uncorrected: from the ' || level || ' run, includes the overhead of profiling the levels below' END AS note
FROM xsp_level_sources
ORDER BY experiment, CASE measured WHEN 'model' THEN 0 WHEN 'layer' THEN 1 ELSE 2 END;
