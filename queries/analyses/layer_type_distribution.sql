-- analyses/layer_type_distribution: how many layers of each type a model has
-- (XSP "layer type distribution").
--
-- From: the prelude's xsp_layer_latency (the layers seen in the layer-level runs).
--
-- title: Layer type distribution
-- group: layer
-- include: lib/latency
-- columns: experiment VARCHAR, layer_type VARCHAR, layers BIGINT, layers_pct DOUBLE,
--     calls_per_inference HUGEINT
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- Layer (module) type.
    layer_type,
    -- Number of distinct layers of that type.
    count(*) AS layers,
    -- Share of the model's layers, percent.
    round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY experiment), 2) AS layers_pct,
    -- Calls per inference of layers of that type.
    sum(calls_per_inference) AS calls_per_inference
FROM xsp_layer_latency
GROUP BY experiment, layer_type
ORDER BY experiment, layers DESC, layer_type;
