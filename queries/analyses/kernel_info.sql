-- analyses/kernel_info: every kernel of every model, per inference, with its hardware metrics
-- and roofline classification (XSP "kernel information").
--
-- From: the prelude's xsp_kernel_by_name (kernel durations of the MLG run, statistics per stable
-- key, summed per name; metrics from metric runs) and xsp_experiment_roof (device peaks).
--
-- title: Kernel information
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, name VARCHAR, calls_per_inference DOUBLE, instances HUGEINT, total_ns HUGEINT,
--     latency_ms DOUBLE, flops DOUBLE, dram_read_bytes DOUBLE, dram_write_bytes DOUBLE,
--     achieved_occupancy DOUBLE, arithmetic_intensity DOUBLE, arithmetic_throughput_gflops DOUBLE,
--     memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    k.experiment,
    -- Kernel name (demangled).
    k.name,
    -- Launches per inference.
    k.calls_per_inference,
    -- Launches and their total duration over the whole source runs (as nsys stats counts them), ns.
    k.instances,
    -- Their total duration over the whole source runs, ns.
    k.total_ns,
    -- Trimmed-mean latency per inference (all its launches), ms.
    round(k.latency_ns / 1e6, 6) AS latency_ms,
    -- FLOPs and DRAM bytes read / written per inference (NULL without metric runs).
    k.flops,
    -- DRAM bytes read per inference (NULL without metric runs).
    k.dram_read_bytes,
    -- DRAM bytes written per inference (NULL without metric runs).
    k.dram_write_bytes,
    -- Achieved occupancy, 0..1, duration-weighted over its launches.
    round(k.achieved_occupancy, 4) AS achieved_occupancy,
    -- Arithmetic intensity, FLOP per DRAM byte.
    round(xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes), 4) AS arithmetic_intensity,
    -- Arithmetic throughput, GFLOP/s: FLOPs / latency.
    round(k.flops / (k.latency_ns / 1e9) / 1e9, 3) AS arithmetic_throughput_gflops,
    -- Memory-bound: intensity below the device's peak FLOP/s / peak DRAM bytes/s (NULL if unknown).
    xsp_memory_bound(xsp_intensity(k.flops, k.dram_read_bytes, k.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM xsp_kernel_by_name AS k
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
ORDER BY k.experiment, k.latency_ns DESC, k.name;
