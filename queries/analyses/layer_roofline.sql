-- analyses/layer_roofline: one roofline point per layer (its kernels' FLOPs and DRAM bytes per
-- inference over their GPU time) with the device's roof -- XSP "layer roofline".
--
-- From: xsp_roofline_points (lib/roofline: xsp_layer_gpu under xsp_experiment_roof); layers without metrics have no point.
--
-- title: Layer roofline
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, gpu_latency_ms DOUBLE,
--     arithmetic_intensity DOUBLE, flops_per_s DOUBLE, peak_flops DOUBLE, peak_dram_bytes_per_s DOUBLE,
--     ideal_intensity DOUBLE, memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- Layer index and name.
    layer_index,
    -- Layer name.
    layer_name,
    -- GPU latency per inference, ms.
    gpu_latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    arithmetic_intensity,
    -- y: achieved FLOP/s over the kernels' time.
    flops_per_s,
    -- The roof: peak FLOP/s, peak DRAM bytes/s, ridge point.
    peak_flops,
    -- Peak DRAM bytes/s of the device.
    peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte.
    ideal_intensity,
    -- Memory-bound (left of the ridge point).
    memory_bound
FROM xsp_roofline_points
WHERE level = 'layer'
ORDER BY experiment, layer_index;
