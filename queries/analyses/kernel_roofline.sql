-- analyses/kernel_roofline: one roofline point per kernel name with the device's roof
-- (XSP "kernel roofline").
--
-- From: the prelude's xsp_kernel_by_name and xsp_experiment_roof; only kernels with FLOP and
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
    k.experiment,
    -- Kernel name.
    k.name,
    -- Latency per inference, ms (the point's weight).
    round(k.latency_ns / 1e6, 6) AS latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes) AS arithmetic_intensity,
    -- y: achieved arithmetic throughput, FLOP/s.
    k.flops / (k.latency_ns / 1e9) AS flops_per_s,
    -- The roof: device, peak FLOP/s, peak DRAM bytes/s, ideal intensity (ridge point).
    r.device_name,
    -- Peak FLOP/s of the device.
    r.peak_flops,
    -- Peak DRAM bytes/s of the device.
    r.peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte: peak FLOP/s / peak DRAM bytes/s.
    r.ideal_intensity,
    -- Attainable FLOP/s at this intensity, and the share of it achieved, percent.
    xsp_attainable_flops(xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes), r.peak_flops, r.peak_dram_bytes_per_s) AS attainable_flops_per_s,
    -- Share of the attainable FLOP/s achieved, percent.
    round(100.0 * (k.flops / (k.latency_ns / 1e9))
          / xsp_attainable_flops(xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes), r.peak_flops, r.peak_dram_bytes_per_s), 2) AS roof_pct,
    -- Memory-bound (left of the ridge point).
    xsp_memory_bound(xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM xsp_kernel_by_name AS k
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
WHERE k.flops IS NOT NULL AND (k.dram_read_bytes IS NOT NULL OR k.dram_write_bytes IS NOT NULL)
ORDER BY k.experiment, k.latency_ns DESC, k.name;
