-- lib/roofline: the roofs (peak FLOP/s, DRAM bytes/s, ideal intensity) per device and per
-- experiment, and the roofline arithmetic the roofline analyses share.
-- include: lib/kernels
--
-- From: devices (peaks from the trace or the built-in table xsp_trace/formats/device_peaks.py),
-- kernel latency (lib/kernels). Variables override every device's peaks:
--     SET VARIABLE xsp_peak_flops = 19.5e12;
--     SET VARIABLE xsp_peak_dram_bytes_per_s = 1.555e12;

-- Roofs: peak FLOP/s and DRAM bytes/s per device (variables override the devices table).
CREATE OR REPLACE TEMP VIEW xsp_device_peaks AS
SELECT
    -- Run.
    run_id,
    -- GPU.
    device_id,
    -- Device name.
    name,
    -- Peak FLOP/s (xsp_peak_flops overrides it).
    coalesce(CAST(getvariable('xsp_peak_flops') AS DOUBLE), peak_flops) AS peak_flops,
    -- Peak DRAM bytes/s (xsp_peak_dram_bytes_per_s overrides it).
    coalesce(CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE), peak_dram_bytes_per_s) AS peak_dram_bytes_per_s,
    -- Ideal arithmetic intensity, FLOP/byte: below it a kernel is memory-bound.
    coalesce(CAST(getvariable('xsp_peak_flops') AS DOUBLE), peak_flops)
        / coalesce(CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE), peak_dram_bytes_per_s) AS ideal_intensity
FROM devices;

-- The roof of each experiment: the device that ran most of its kernel-level GPU time.
CREATE OR REPLACE TEMP VIEW xsp_experiment_roof AS
WITH busiest AS (
    SELECT experiment, arg_max(first_run_id, gpu_ns) AS run_id, arg_max(device_id, gpu_ns) AS device_id
    FROM (SELECT experiment, first_run_id, device_id, sum(total_ns) AS gpu_ns
          FROM xsp_kernel_latency GROUP BY ALL)
    GROUP BY experiment
)
SELECT
    -- The experiment.
    b.experiment,
    -- The run and GPU that ran most of its kernel-level GPU time.
    b.run_id,
    -- That GPU.
    b.device_id,
    -- Its name.
    p.name AS device_name,
    -- Peak FLOP/s.
    coalesce(p.peak_flops, CAST(getvariable('xsp_peak_flops') AS DOUBLE)) AS peak_flops,
    -- Peak DRAM bytes/s.
    coalesce(p.peak_dram_bytes_per_s, CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE)) AS peak_dram_bytes_per_s,
    -- Ideal arithmetic intensity, FLOP/byte.
    coalesce(p.ideal_intensity, CAST(getvariable('xsp_peak_flops') AS DOUBLE)
                                   / CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE)) AS ideal_intensity
FROM busiest AS b
LEFT JOIN xsp_device_peaks AS p ON p.run_id = b.run_id AND p.device_id = b.device_id;

-- Roofline arithmetic. Arithmetic intensity = FLOPs / DRAM bytes (read + write).
CREATE OR REPLACE TEMP MACRO xsp_intensity(flops, read_bytes, write_bytes) AS
    flops / nullif(coalesce(read_bytes, 0) + coalesce(write_bytes, 0), 0);
-- Memory-bound <=> intensity below the device's ideal intensity (peak FLOP/s / peak bytes/s).
CREATE OR REPLACE TEMP MACRO xsp_memory_bound(intensity, ideal_intensity) AS intensity < ideal_intensity;
-- Attainable FLOP/s under the roof at a given intensity.
CREATE OR REPLACE TEMP MACRO xsp_attainable_flops(intensity, peak_flops, peak_bytes_per_s) AS
    least(peak_flops, intensity * peak_bytes_per_s);

-- The roofline point of every kernel name, layer and model of every experiment with hardware
-- metrics (FLOPs and DRAM bytes), under its experiment's roof: what kernel_roofline,
-- layer_roofline and model_roofline print, each its own level's rows.
CREATE OR REPLACE TEMP VIEW xsp_roofline_points AS
WITH points AS (
    SELECT 'kernel' AS level, experiment, name, CAST(NULL AS INTEGER) AS layer_index, CAST(NULL AS VARCHAR) AS layer_name,
           latency_ns AS gpu_ns, flops, dram_read_bytes, dram_write_bytes
    FROM xsp_kernel_by_name
    UNION ALL
    SELECT 'layer', experiment, NULL, layer_index, layer_name, gpu_ns, flops, dram_read_bytes, dram_write_bytes
    FROM xsp_layer_gpu WHERE layer_index IS NOT NULL
    UNION ALL
    SELECT 'model', experiment, NULL, NULL, NULL, gpu_ns, flops, dram_read_bytes, dram_write_bytes
    FROM xsp_model_gpu
)
SELECT
    -- kernel (one row per kernel name), layer or model.
    p.level,
    -- The experiment.
    p.experiment,
    -- Kernel name (kernel rows).
    p.name,
    -- Layer index (layer rows).
    p.layer_index,
    -- Layer name (layer rows).
    p.layer_name,
    -- GPU time per inference, ns.
    p.gpu_ns,
    -- The same in ms, rounded to 1 ns.
    round(p.gpu_ns / 1e6, 6) AS gpu_latency_ms,
    -- x: arithmetic intensity, FLOP/byte.
    xsp_intensity(p.flops, p.dram_read_bytes, p.dram_write_bytes) AS arithmetic_intensity,
    -- y: achieved FLOP/s over the kernels' time.
    p.flops / (p.gpu_ns / 1e9) AS flops_per_s,
    -- The roof's device.
    r.device_name,
    -- Peak FLOP/s of the device.
    r.peak_flops,
    -- Peak DRAM bytes/s of the device.
    r.peak_dram_bytes_per_s,
    -- Ideal intensity (the ridge point), FLOP/byte: peak FLOP/s / peak DRAM bytes/s.
    r.ideal_intensity,
    -- Attainable FLOP/s at this intensity.
    xsp_attainable_flops(xsp_intensity(p.flops, p.dram_read_bytes, p.dram_write_bytes), r.peak_flops, r.peak_dram_bytes_per_s) AS attainable_flops_per_s,
    -- Share of the attainable FLOP/s achieved, percent.
    round(100.0 * (p.flops / (p.gpu_ns / 1e9))
          / xsp_attainable_flops(xsp_intensity(p.flops, p.dram_read_bytes, p.dram_write_bytes), r.peak_flops, r.peak_dram_bytes_per_s), 2) AS roof_pct,
    -- Memory-bound (left of the ridge point).
    xsp_memory_bound(xsp_intensity(p.flops, p.dram_read_bytes, p.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM points AS p
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
WHERE p.flops IS NOT NULL AND (p.dram_read_bytes IS NOT NULL OR p.dram_write_bytes IS NOT NULL);
