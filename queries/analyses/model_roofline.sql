-- analyses/model_roofline: one roofline point per model (all kernels of one inference) with the
-- device's roof -- XSP "model roofline".
--
-- From: the prelude's xsp_model_gpu and xsp_experiment_roof; models without metrics have no point.
--
-- title: Model roofline
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, gpu_latency_ms DOUBLE, arithmetic_intensity DOUBLE, flops_per_s DOUBLE,
--     device_name VARCHAR, peak_flops DOUBLE, peak_dram_bytes_per_s DOUBLE, ideal_intensity DOUBLE,
--     memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    g.experiment,
    -- GPU latency per inference, ms.
    round(g.gpu_ns / 1e6, 6) AS gpu_latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes) AS arithmetic_intensity,
    -- y: achieved FLOP/s over the kernels' time.
    g.flops / (g.gpu_ns / 1e9) AS flops_per_s,
    -- The roof: device, peak FLOP/s, peak DRAM bytes/s, ridge point.
    r.device_name,
    -- Peak FLOP/s of the device.
    r.peak_flops,
    -- Peak DRAM bytes/s of the device.
    r.peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte.
    r.ideal_intensity,
    -- Memory-bound (left of the ridge point).
    xsp_memory_bound(xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM xsp_model_gpu AS g
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
WHERE g.flops IS NOT NULL AND (g.dram_read_bytes IS NOT NULL OR g.dram_write_bytes IS NOT NULL)
ORDER BY g.experiment;
