-- analyses/model_gpu_aggregates: the GPU work of one inference of each model -- kernels, GPU
-- time and its share of the model latency, FLOPs, DRAM traffic, occupancy, roofline class
-- (XSP "model/GPU kernel aggregates").
--
-- From: the prelude's xsp_model_gpu (MLG run), xsp_model_latency (M run), xsp_experiment_roof.
--
-- title: Model GPU aggregates
-- group: kernel
-- include: lib/latency, lib/roofline
-- columns: experiment VARCHAR, kernels_per_inference DOUBLE, gpu_latency_ms DOUBLE, model_latency_ms DOUBLE,
--     gpu_pct DOUBLE, flops DOUBLE, dram_read_bytes DOUBLE, dram_write_bytes DOUBLE,
--     achieved_occupancy DOUBLE, arithmetic_intensity DOUBLE, arithmetic_throughput_gflops DOUBLE,
--     memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    g.experiment,
    -- Kernel launches per inference.
    g.kernels_per_inference,
    -- Summed trimmed-mean kernel latency per inference, ms.
    round(g.gpu_ns / 1e6, 6) AS gpu_latency_ms,
    -- Model latency (corrected when from the M run), ms, and the GPU share of it, percent.
    round(m.trimmed_mean_ns / 1e6, 6) AS model_latency_ms,
    -- GPU time as a share of the model latency, percent.
    round(100.0 * g.gpu_ns / m.trimmed_mean_ns, 2) AS gpu_pct,
    -- FLOPs, DRAM bytes read and written per inference.
    g.flops,
    -- DRAM bytes read per inference (NULL without metric runs).
    g.dram_read_bytes,
    -- DRAM bytes written per inference (NULL without metric runs).
    g.dram_write_bytes,
    -- Achieved occupancy, duration-weighted over all kernels.
    round(g.achieved_occupancy, 4) AS achieved_occupancy,
    -- Arithmetic intensity (FLOP/byte) and throughput (GFLOP/s over the kernels' time).
    round(xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes), 4) AS arithmetic_intensity,
    -- Arithmetic throughput, GFLOP/s: FLOPs / GPU time.
    round(g.flops / (g.gpu_ns / 1e9) / 1e9, 3) AS arithmetic_throughput_gflops,
    -- Memory-bound on the experiment's device.
    xsp_memory_bound(xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM xsp_model_gpu AS g
LEFT JOIN xsp_model_latency AS m USING (experiment)
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
ORDER BY g.experiment;
