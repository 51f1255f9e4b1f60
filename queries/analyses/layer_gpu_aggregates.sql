-- analyses/layer_gpu_aggregates: the GPU work of every layer per inference -- kernels, GPU
-- time, FLOPs, DRAM traffic, occupancy, roofline class (XSP "layer/GPU kernel aggregates").
--
-- From: the prelude's xsp_layer_gpu (the MLG run's kernels grouped by their innermost layer;
-- layer_index NULL = kernels launched outside any layer) and xsp_experiment_roof.
--
-- title: Per-layer GPU aggregates
-- group: kernel
-- include: lib/roofline
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, kernels_per_inference DOUBLE,
--     gpu_latency_ms DOUBLE, backward_gpu_latency_ms DOUBLE, flops DOUBLE, dram_read_bytes DOUBLE,
--     dram_write_bytes DOUBLE, achieved_occupancy DOUBLE, arithmetic_intensity DOUBLE,
--     arithmetic_throughput_gflops DOUBLE, memory_bound BOOLEAN
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>".
    g.experiment,
    -- Layer index and name (NULL: outside any layer).
    g.layer_index,
    -- Layer name.
    g.layer_name,
    -- Kernel launches per inference.
    g.kernels_per_inference,
    -- Summed trimmed-mean kernel latency per inference, ms: every kernel charged to the layer, and
    -- the part that is its backward work (charged through autograd sequence numbers).
    round(g.gpu_ns / 1e6, 6) AS gpu_latency_ms,
    -- Of that, kernels of the backward pass charged to the layer through the autograd sequence number, ms.
    round(g.backward_gpu_ns / 1e6, 6) AS backward_gpu_latency_ms,
    -- FLOPs, DRAM bytes read and written per inference.
    g.flops,
    -- DRAM bytes read per inference by its kernels (NULL without metric runs).
    g.dram_read_bytes,
    -- DRAM bytes written per inference by its kernels (NULL without metric runs).
    g.dram_write_bytes,
    -- Achieved occupancy, duration-weighted over the layer's kernels.
    round(g.achieved_occupancy, 4) AS achieved_occupancy,
    -- Arithmetic intensity (FLOP/byte) and throughput (GFLOP/s over the kernels' time).
    round(xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes), 4) AS arithmetic_intensity,
    -- Arithmetic throughput of its kernels, GFLOP/s: FLOPs / GPU time.
    round(g.flops / (g.gpu_ns / 1e9) / 1e9, 3) AS arithmetic_throughput_gflops,
    -- Memory-bound on the experiment's device.
    xsp_memory_bound(xsp_intensity(g.flops, g.dram_read_bytes, g.dram_write_bytes), r.ideal_intensity) AS memory_bound
FROM xsp_layer_gpu AS g
LEFT JOIN xsp_experiment_roof AS r USING (experiment)
ORDER BY g.experiment, g.layer_index NULLS LAST;
