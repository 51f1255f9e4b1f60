-- analyses/layer_type_latency_share: how a model's layer time splits by layer type
-- (XSP "layer type latency share").
--
-- From: the prelude's xsp_layer_latency (corrected layer latencies).
--
-- title: Layer type latency share
-- group: layer
-- include: lib/latency
-- columns: experiment VARCHAR, layer_type VARCHAR, layers BIGINT, latency_ms DOUBLE, latency_pct DOUBLE
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- Layer (module) type.
    layer_type,
    -- Layers of that type.
    count(*) AS layers,
    -- Their summed trimmed-mean latency per inference, ms.
    round(sum(trimmed_mean_ns) / 1e6, 6) AS latency_ms,
    -- Share of all layers' latency, percent.
    round(100.0 * sum(trimmed_mean_ns) / sum(sum(trimmed_mean_ns)) OVER (PARTITION BY experiment), 2) AS latency_pct
FROM xsp_layer_latency
GROUP BY experiment, layer_type
ORDER BY experiment, latency_ms DESC, layer_type;
