-- analyses/model_batch_scaling: latency and throughput of each model against batch size
-- (XSP "latency/throughput vs batch size").
--
-- From: the prelude's xsp_model_latency (only experiments with a batch size).
--
-- title: Latency and throughput vs batch size
-- group: model
-- include: lib/latency
-- columns: model VARCHAR, batch_size INTEGER, corrected BOOLEAN, latency_ms DOUBLE, throughput_per_s DOUBLE,
--     latency_per_input_ms DOUBLE, throughput_speedup DOUBLE
SELECT
    -- Model name.
    model,
    -- Batch size.
    batch_size,
    -- Whether the latency is corrected (from the M run).
    corrected,
    -- Trimmed-mean latency of one inference, ms.
    round(trimmed_mean_ns / 1e6, 6) AS latency_ms,
    -- Throughput, inputs per second.
    round(batch_size / (trimmed_mean_ns / 1e9), 2) AS throughput_per_s,
    -- Latency per input, ms.
    round(trimmed_mean_ns / 1e6 / batch_size, 6) AS latency_per_input_ms,
    -- Throughput relative to the model's smallest batch size.
    round((batch_size / trimmed_mean_ns)
          / first(batch_size / trimmed_mean_ns) OVER (PARTITION BY model ORDER BY batch_size), 3) AS throughput_speedup
FROM xsp_model_latency
WHERE batch_size IS NOT NULL
ORDER BY model, batch_size;
