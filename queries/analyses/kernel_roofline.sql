-- analyses/kernel_roofline: one roofline point per kernel name with the device's roof
-- (XSP "kernel roofline").
--
-- From: xsp_roofline_points (lib/roofline: xsp_kernel_by_name under xsp_experiment_roof); only kernels with FLOP and
-- DRAM metrics have a point.
--
-- title: Kernel roofline
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, name VARCHAR, latency_ms DOUBLE, arithmetic_intensity DOUBLE,
--     flops_per_s DOUBLE, device_name VARCHAR, peak_flops DOUBLE, peak_dram_bytes_per_s DOUBLE,
--     ideal_intensity DOUBLE, attainable_flops_per_s DOUBLE, roof_pct DOUBLE, memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    experiment,
    -- Kernel name.
    name,
    -- Latency per inference, ms (the point's weight).
    gpu_latency_ms AS latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    arithmetic_intensity,
    -- y: achieved arithmetic throughput, FLOP/s.
    flops_per_s,
    -- The roof: device, peak FLOP/s, peak DRAM bytes/s, ideal intensity (ridge point).
    device_name,
    -- Peak FLOP/s of the device.
    peak_flops,
    -- Peak DRAM bytes/s of the device.
    peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte: peak FLOP/s / peak DRAM bytes/s.
    ideal_intensity,
    -- Attainable FLOP/s at this intensity, and the share of it achieved, percent.
    attainable_flops_per_s,
    -- Share of the attainable FLOP/s achieved, percent.
    roof_pct,
    -- Memory-bound (left of the ridge point).
    memory_bound
FROM xsp_roofline_points
WHERE level = 'kernel'
ORDER BY experiment, gpu_ns DESC, name;
