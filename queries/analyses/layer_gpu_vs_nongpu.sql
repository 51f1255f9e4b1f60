-- analyses/layer_gpu_vs_nongpu: how much of each layer's latency is GPU kernel time and how much
-- is everything else (framework, launch, synchronization) -- XSP "layer GPU vs non-GPU latency".
--
-- From: the prelude's xsp_layer_latency (layer latency from the ML run) and xsp_layer_gpu
-- (its kernels' durations from the MLG run): non-GPU = layer latency - sum of the latencies of the
-- kernels launched inside the layer range (backward work charged to the layer through autograd
-- runs outside the range and is left out here; layer_gpu_aggregates shows it).
--
-- title: Layer GPU vs non-GPU latency
-- group: kernel
-- include: lib/kernels, lib/latency
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, layer_type VARCHAR,
--     layer_latency_ms DOUBLE, gpu_latency_ms DOUBLE, non_gpu_latency_ms DOUBLE, gpu_pct DOUBLE,
--     corrected BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    t.experiment,
    -- Layer index, name and type.
    t.layer_index,
    -- Layer name.
    t.layer_name,
    -- Layer type (module class).
    t.layer_type,
    -- Layer latency per inference, ms (trimmed mean; corrected when from the ML run).
    round(t.trimmed_mean_ns / 1e6, 6) AS layer_latency_ms,
    -- GPU latency: the summed trimmed-mean durations per inference of the kernels launched inside it, ms.
    round(coalesce(g.enclosed_gpu_ns, 0) / 1e6, 6) AS gpu_latency_ms,
    -- Non-GPU latency: layer latency - GPU latency, ms.
    round((t.trimmed_mean_ns - coalesce(g.enclosed_gpu_ns, 0)) / 1e6, 6) AS non_gpu_latency_ms,
    -- GPU share of the layer latency, percent.
    round(100.0 * coalesce(g.enclosed_gpu_ns, 0) / t.trimmed_mean_ns, 2) AS gpu_pct,
    -- Whether both inputs are corrected (layer from ML, kernels from MLG).
    t.corrected AND coalesce(s.corrected, FALSE) AS corrected
FROM xsp_layer_latency AS t
LEFT JOIN xsp_layer_gpu AS g ON g.experiment = t.experiment AND g.layer_index = t.layer_index
LEFT JOIN (SELECT experiment, bool_and(corrected) AS corrected FROM xsp_level_sources WHERE measured = 'kernel' GROUP BY ALL) AS s
    ON s.experiment = t.experiment
ORDER BY t.experiment, t.layer_index;
