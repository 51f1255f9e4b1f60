-- analyses/model_flops_utilization: model FLOPs utilisation (MFU) per run -- the FLOPs of the modelled
-- framework ops (GEMMs, attention, elementwise; TraceLens' perf models on recorded shapes) per second of
-- step wall time, against the device's dense peak for the precision that carries most of those FLOPs.
-- Ops with a model but without the shapes it needs are not counted as 0: they are counted apart, with
-- the reason, and modelled_kernel_time_pct says how much of the kernel time the FLOPs cover.
--
-- From: xsp_op_perf and xsp_matrix_peaks (queries/lib/op_perf.sql), steps and attribution
-- (which step each op belongs to), spans (kernel time of the run).
--
-- title: Model FLOPs utilisation (MFU) from recorded shapes
-- group: model
-- include: lib/op_perf
-- columns: run_id INTEGER, steps BIGINT, ops BIGINT, not_modelled_ops BIGINT, not_modelled_reason VARCHAR,
--     gflop_per_step DOUBLE, step_ms DOUBLE, achieved_tflops DOUBLE, precision VARCHAR, peak_tflops DOUBLE,
--     mfu_pct DOUBLE, modelled_kernel_time_pct DOUBLE
WITH op_steps AS (
    -- ops without a model, and ops whose inner op is counted, are not "modelled but not computed"
    SELECT o.*, att.step_span_id, coalesce(o.not_modelled_key IN ('no_model', 'counted_inside'), false) AS ignored
    FROM xsp_op_perf AS o
    JOIN attribution AS att ON att.run_id = o.run_id AND att.span_id = o.span_id
    WHERE att.step_span_id IS NOT NULL
), per_run AS (
    SELECT run_id, sum(flops) AS flops, coalesce(sum(kernel_ns) FILTER (WHERE flops IS NOT NULL), 0) AS modelled_kernel_ns,
           count(flops) AS ops, count(*) FILTER (WHERE flops IS NULL AND NOT ignored) AS not_modelled_ops,
           mode(not_modelled_reason) FILTER (WHERE NOT ignored) AS not_modelled_reason,
           arg_max(precision, flops) AS precision, min(device_id) AS device_id
    FROM op_steps GROUP BY run_id
), step_time AS (
    SELECT run_id, count(*) AS steps, sum(end_ns - start_ns) AS step_ns FROM steps GROUP BY run_id
), kernel_time AS (
    SELECT s.run_id, sum(s.end_ns - s.start_ns) AS kernel_ns
    FROM spans AS s JOIN attribution AS att ON att.run_id = s.run_id AND att.span_id = s.span_id
    WHERE s.kind = 'kernel' AND att.step_span_id IS NOT NULL GROUP BY s.run_id
)
SELECT
    -- Run.
    p.run_id,
    -- Steps (inferences / training iterations) measured.
    t.steps,
    -- Modelled op calls inside those steps (with FLOPs).
    p.ops,
    -- Calls of ops with a model whose FLOPs could not be computed (not counted, not 0).
    p.not_modelled_ops,
    -- Why, for most of them (e.g. shapes not recorded); NULL when every call is modelled.
    p.not_modelled_reason,
    -- Modelled FLOPs per step, GFLOP.
    round(p.flops / t.steps / 1e9, 3) AS gflop_per_step,
    -- Mean step wall time, ms.
    round(t.step_ns / t.steps / 1e6, 6) AS step_ms,
    -- Achieved: modelled FLOPs / step wall time, TFLOP/s.
    round(p.flops / t.step_ns / 1e3, 3) AS achieved_tflops,
    -- The precision carrying most modelled FLOPs (its dense peak is the denominator).
    p.precision,
    -- That peak on the run's device, TFLOP/s (NULL for a device or precision the table does not know).
    round(mp.peak_flops / 1e12, 1) AS peak_tflops,
    -- MFU: achieved / peak, percent (NULL, never 0, when no op has FLOPs or the peak is unknown).
    round(100.0 * (p.flops / t.step_ns * 1e9) / mp.peak_flops, 3) AS mfu_pct,
    -- Share of the steps' kernel time spent in kernels of modelled ops, percent (how much of the GPU
    -- time the FLOP count explains).
    round(100.0 * p.modelled_kernel_ns / nullif(k.kernel_ns, 0), 2) AS modelled_kernel_time_pct
FROM per_run AS p
JOIN step_time AS t USING (run_id)
LEFT JOIN kernel_time AS k USING (run_id)
LEFT JOIN xsp_matrix_peaks AS mp ON mp.run_id = p.run_id AND mp.device_id = p.device_id AND mp.precision = p.precision
ORDER BY p.run_id;
