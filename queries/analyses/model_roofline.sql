-- analyses/model_roofline: one roofline point per model (all kernels of one inference) with the
-- device's roof -- XSP "model roofline".
--
-- From: xsp_roofline_points (lib/roofline: xsp_model_gpu under xsp_experiment_roof); models without metrics have no point.
--
-- title: Model roofline
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, gpu_latency_ms DOUBLE, arithmetic_intensity DOUBLE, flops_per_s DOUBLE,
--     device_name VARCHAR, peak_flops DOUBLE, peak_dram_bytes_per_s DOUBLE, ideal_intensity DOUBLE,
--     memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- GPU latency per inference, ms.
    gpu_latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    arithmetic_intensity,
    -- y: achieved FLOP/s over the kernels' time.
    flops_per_s,
    -- The roof: device, peak FLOP/s, peak DRAM bytes/s, ridge point.
    device_name,
    -- Peak FLOP/s of the device.
    peak_flops,
    -- Peak DRAM bytes/s of the device.
    peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte.
    ideal_intensity,
    -- Memory-bound (left of the ridge point).
    memory_bound
FROM xsp_roofline_points
WHERE level = 'model'
ORDER BY experiment;
