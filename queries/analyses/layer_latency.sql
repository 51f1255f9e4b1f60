-- analyses/layer_latency: latency of every layer, corrected (from the ML run), with its spread
-- (XSP "layer latency").
--
-- From: the prelude's xsp_layer_latency: per inference, a layer's latency is the sum of its
-- calls; statistics over the inferences.
--
-- title: Layer latency
-- group: layer
-- include: lib/latency
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, layer_type VARCHAR,
--     source_level VARCHAR, corrected BOOLEAN, samples BIGINT, calls_per_inference BIGINT, latency_ms DOUBLE,
--     median_ms DOUBLE, p90_ms DOUBLE, latency_pct DOUBLE
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- Layer index, name and type.
    layer_index,
    -- Layer name.
    layer_name,
    -- Layer type (module class).
    layer_type,
    -- Run level the latency comes from and whether it is corrected.
    level AS source_level,
    -- Whether the latency is corrected (taken from a run that profiled no lower level).
    corrected,
    -- Inferences measured.
    samples,
    -- Calls per inference.
    calls_per_inference,
    -- Latency per inference, ms: trimmed mean (trim 0.2), median, 90th percentile.
    round(trimmed_mean_ns / 1e6, 6) AS latency_ms,
    -- Median latency per inference, ms.
    round(median_ns / 1e6, 6) AS median_ms,
    -- 90th percentile of the latency per inference, ms.
    round(p90_ns / 1e6, 6) AS p90_ms,
    -- Share of the sum of all layers' latency, percent.
    round(100.0 * trimmed_mean_ns / sum(trimmed_mean_ns) OVER (PARTITION BY experiment), 2) AS latency_pct
FROM xsp_layer_latency
ORDER BY experiment, layer_index;
