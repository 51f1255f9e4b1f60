-- analyses/model_info: latency and throughput of every model (XSP "model information").
--
-- From: the prelude's xsp_model_latency (model ranges of the M run, statistics over inferences).
--
-- title: Model information: latency and throughput
-- group: model
-- include: lib/latency
-- columns: experiment VARCHAR, model VARCHAR, batch_size INTEGER, source_level VARCHAR, corrected BOOLEAN,
--     inferences BIGINT, latency_ms DOUBLE, median_ms DOUBLE, p90_ms DOUBLE, throughput_per_s DOUBLE
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>" for a plain trace.
    experiment,
    -- Model name and batch size.
    model,
    -- Batch size (NULL for a plain trace).
    batch_size,
    -- Run level the latency comes from (M when corrected) and whether it is corrected.
    level AS source_level,
    -- Whether the latency is corrected (taken from the M run).
    corrected,
    -- Inferences measured.
    samples AS inferences,
    -- Latency of one inference, ms: trimmed mean (trim 0.2 as the XSP authors), median, 90th percentile.
    round(trimmed_mean_ns / 1e6, 6) AS latency_ms,
    -- Median latency of one inference, ms.
    round(median_ns / 1e6, 6) AS median_ms,
    -- 90th percentile of the latency of one inference, ms.
    round(p90_ns / 1e6, 6) AS p90_ms,
    -- Throughput, inputs per second: batch size / trimmed-mean latency (NULL without a batch size).
    round(batch_size / (trimmed_mean_ns / 1e9), 2) AS throughput_per_s
FROM xsp_model_latency
ORDER BY model, batch_size, experiment;
