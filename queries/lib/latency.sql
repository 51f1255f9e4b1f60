-- lib/latency: model latency per experiment and layer latency per (experiment, layer), over the
-- inferences of their level's source runs (leveled correction).
-- include: lib/stats, lib/experiments, lib/layers
--
-- From: the inferences and source runs (lib/experiments) and the layer calls (lib/layers).

-- Model latency per experiment, from its model-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_model_latency AS
SELECT
    -- The experiment.
    s.experiment,
    -- Model name.
    e.model,
    -- Batch size.
    e.batch_size,
    -- The run level the latency is taken from (NULL: a plain trace).
    s.level,
    -- Whether it is corrected (measured without lower levels' overhead).
    s.corrected,
    -- Inferences measured.
    count(*) AS samples,
    -- Trimmed mean latency, ns.
    xsp_trimmed_mean(list(i.end_ns - i.start_ns)) AS trimmed_mean_ns,
    -- Median, ns.
    median(i.end_ns - i.start_ns) AS median_ns,
    -- 90th percentile, ns.
    quantile_cont(i.end_ns - i.start_ns, 0.9) AS p90_ns,
    -- Fastest inference, ns.
    min(i.end_ns - i.start_ns) AS min_ns,
    -- Slowest inference, ns.
    max(i.end_ns - i.start_ns) AS max_ns
FROM xsp_source_runs AS s
JOIN xsp_inferences AS i USING (run_id)
JOIN xsp_experiments AS e USING (experiment)
WHERE s.measured = 'model'
GROUP BY s.experiment, e.model, e.batch_size, s.level, s.corrected;

-- Layer latency per (experiment, layer): the layer's total time per inference (all its calls),
-- over the inferences of the layer-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_layer_latency AS
WITH per_inference AS (
    SELECT s.experiment, s.level, s.corrected, c.run_id, c.iteration, c.layer_index,
           any_value(c.layer_name) AS layer_name, any_value(c.layer_type) AS layer_type,
           count(*) AS calls, sum(c.latency_ns) AS latency_ns
    FROM xsp_source_runs AS s
    JOIN xsp_layer_calls AS c USING (run_id)
    WHERE s.measured = 'layer'
    GROUP BY s.experiment, s.level, s.corrected, c.run_id, c.iteration, c.layer_index
)
SELECT
    -- The experiment.
    experiment,
    -- Layer index.
    layer_index,
    -- Layer name.
    layer_name,
    -- Layer type.
    layer_type,
    -- The run level the latency is taken from (NULL: a plain trace).
    level,
    -- Whether it is corrected.
    corrected,
    -- Inferences measured.
    count(*) AS samples,
    -- Calls of the layer per inference.
    max(calls) AS calls_per_inference,
    -- Trimmed mean of the layer's time per inference (all its calls), ns.
    xsp_trimmed_mean(list(latency_ns)) AS trimmed_mean_ns,
    -- Median, ns.
    median(latency_ns) AS median_ns,
    -- 90th percentile, ns.
    quantile_cont(latency_ns, 0.9) AS p90_ns
FROM per_inference
GROUP BY experiment, layer_index, layer_name, layer_type, level, corrected;
