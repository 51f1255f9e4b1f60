-- analyses/op_roofline: a roofline point per framework op and operand shape, from the shapes and
-- dtypes the profiler recorded (no Nsight Compute needed): FLOPs and bytes by TraceLens' perf models,
-- the kernel time the op launched, and the device's roof for the op's precision. An op with a model
-- whose inputs the profiler did not record, and an op without a model that launched kernels, has NULL
-- FLOPs and bytes and says why (never 0).
--
-- From: xsp_op_perf (queries/lib/op_perf.sql) and xsp_op_roof (queries/lib/op_roof.sql) over spans, span_args
-- ("Input Dims", "Input type", "Concrete Inputs"), span_ancestors and devices.
--
-- title: Roofline per op and shape from recorded shapes (TraceLens perf models)
-- group: kernel
-- include: lib/op_roof
-- columns: run_id INTEGER, name VARCHAR, input_dims VARCHAR, dtype VARCHAR, precision VARCHAR, calls BIGINT,
--     flops_per_call DOUBLE, bytes_per_call DOUBLE, not_modelled_reason VARCHAR, kernel_ms DOUBLE,
--     kernel_us_per_call DOUBLE, arithmetic_intensity DOUBLE, achieved_tflops DOUBLE,
--     attainable_tflops DOUBLE, roof_pct DOUBLE, bound VARCHAR, modelled_kernel_time_pct DOUBLE
SELECT
    -- Run.
    o.run_id,
    -- Op name (e.g. aten::addmm).
    o.name,
    -- Operand shapes as the profiler wrote them ("Input Dims").
    o.input_dims,
    -- Element type of the first operand, and its precision class (picks the matrix peak).
    o.dtype,
    -- Precision class of that dtype (fp32, bf16, fp16, fp8, ...).
    o.precision,
    -- Calls with these shapes.
    count(*) AS calls,
    -- FLOPs of one call (TraceLens' model); NULL when not modelled.
    any_value(o.flops) AS flops_per_call,
    -- Bytes one call must move at least (operands read, result written).
    any_value(o.bytes) AS bytes_per_call,
    -- Why the op has no FLOPs (e.g. shapes not recorded); NULL when it has them.
    o.not_modelled_reason,
    -- Kernel time of all calls, ms, and per call, us.
    round(sum(o.kernel_ns) / 1e6, 6) AS kernel_ms,
    -- Mean kernel time of one call, us.
    round(avg(o.kernel_ns) / 1e3, 3) AS kernel_us_per_call,
    -- x: arithmetic intensity, FLOP/byte.
    round(any_value(o.flops) / nullif(any_value(o.bytes), 0), 3) AS arithmetic_intensity,
    -- y: achieved FLOP/s over the kernels' time, TFLOP/s.
    round(sum(o.flops) / nullif(sum(o.kernel_ns), 0) / 1e3, 3) AS achieved_tflops,
    -- The roof at this intensity: min(peak FLOP/s for the precision, intensity x DRAM bandwidth), TFLOP/s.
    -- (DuckDB's least() skips NULLs: an op without FLOPs or bytes gets no roof, not the peak).
    round(CASE WHEN any_value(o.flops) IS NOT NULL AND any_value(o.bytes) IS NOT NULL
               THEN least(any_value(r.peak_flops), any_value(o.flops) / nullif(any_value(o.bytes), 0) * any_value(r.peak_dram_bytes_per_s)) END / 1e12, 3)
        AS attainable_tflops,
    -- Achieved share of that roof, percent.
    round(100.0 * (sum(o.flops) / nullif(sum(o.kernel_ns), 0) * 1e9)
          / nullif(least(any_value(r.peak_flops), any_value(o.flops) / nullif(any_value(o.bytes), 0) * any_value(r.peak_dram_bytes_per_s)), 0), 2)
        AS roof_pct,
    -- memory when the intensity lies left of the ridge point (peak FLOP/s / DRAM bandwidth), else compute;
    -- network for a collective (FLOPs 0: its bytes cross the interconnect, not DRAM alone).
    CASE WHEN any_value(o.unit) = 'network' THEN 'network'
         WHEN any_value(r.peak_flops) IS NULL OR any_value(r.peak_dram_bytes_per_s) IS NULL
              OR any_value(o.flops) / nullif(any_value(o.bytes), 0) IS NULL THEN NULL
         WHEN any_value(o.flops) / nullif(any_value(o.bytes), 0) < any_value(r.peak_flops) / any_value(r.peak_dram_bytes_per_s)
         THEN 'memory' ELSE 'compute' END AS bound,
    -- Share of the run's kernel time launched by ops with FLOPs, percent (the same on each row of a
    -- run: how much of the GPU time these points explain).
    round(100.0 * sum(coalesce(sum(o.kernel_ns) FILTER (WHERE o.flops IS NOT NULL), 0)) OVER (PARTITION BY o.run_id)
          / nullif(any_value(k.kernel_ns), 0), 2) AS modelled_kernel_time_pct
FROM xsp_op_perf AS o
LEFT JOIN xsp_op_roof AS r USING (run_id, span_id)
LEFT JOIN (SELECT run_id, sum(end_ns - start_ns) AS kernel_ns FROM spans WHERE kind = 'kernel' GROUP BY run_id) AS k USING (run_id)
GROUP BY o.run_id, o.name, o.input_dims, o.dtype, o.precision, o.not_modelled_reason
ORDER BY o.run_id, sum(o.kernel_ns) DESC, o.name, o.input_dims;
