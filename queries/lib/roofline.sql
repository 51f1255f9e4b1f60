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
