-- analyses/op_categories: time and share per op category (GEMM, conv, attention, norm, elementwise,
-- reduction, communication, memory, other) per run -- TraceLens' first table -- both as GPU time
-- (each kernel, copy and set by its name, or by its launching op when the name does not say) and
-- as CPU op time (the outermost op calls, so a call inside another is not counted twice).
--
-- From: xsp_kernel_categories and xsp_op_name_categories (queries/lib/op_categories.sql, name
-- patterns of xsp_trace/formats/op_categories.py), spans and span_ancestors.
--
-- title: Time per op category: GEMM, conv, attention, norm, elementwise, ...
-- group: kernel
-- include: lib/op_categories
-- columns: run_id INTEGER, category VARCHAR, kernels BIGINT, kernel_ms DOUBLE, kernel_pct DOUBLE,
--     kernel_ms_from_launching_op DOUBLE, ops BIGINT, op_ms DOUBLE, op_pct DOUBLE
WITH kernel_time AS (
    SELECT run_id, category, count(*) AS kernels, sum(dur_ns) AS kernel_ns,
           coalesce(sum(dur_ns) FILTER (WHERE category_from = 'launching op'), 0) AS from_op_ns
    FROM xsp_kernel_categories GROUP BY ALL
), outer_ops AS (
    SELECT s.run_id, oc.category, count(*) AS ops, sum(s.end_ns - s.start_ns) AS op_ns
    FROM spans AS s
    JOIN xsp_op_name_categories AS oc ON oc.name = s.name
    WHERE s.kind = 'op' AND NOT EXISTS (
        SELECT 1 FROM span_ancestors AS an JOIN spans AS o ON o.run_id = an.run_id AND o.span_id = an.ancestor_id AND o.kind = 'op'
        WHERE an.run_id = s.run_id AND an.span_id = s.span_id)
    GROUP BY ALL
), joined AS (
    SELECT * FROM kernel_time FULL JOIN outer_ops USING (run_id, category)
)
SELECT
    -- Run.
    run_id,
    -- Category.
    category,
    -- GPU kernels, copies and sets in it.
    coalesce(kernels, 0) AS kernels,
    -- Their summed GPU time, ms.
    round(coalesce(kernel_ns, 0) / 1e6, 6) AS kernel_ms,
    -- Share of the run's summed GPU time, percent.
    round(100.0 * coalesce(kernel_ns, 0) / nullif(sum(kernel_ns) OVER (PARTITION BY run_id), 0), 2) AS kernel_pct,
    -- Of that, ms categorised by the launching op (the kernel's name did not say).
    round(coalesce(from_op_ns, 0) / 1e6, 6) AS kernel_ms_from_launching_op,
    -- Outermost op calls in it.
    coalesce(ops, 0) AS ops,
    -- Their summed CPU wall time, ms.
    round(coalesce(op_ns, 0) / 1e6, 6) AS op_ms,
    -- Share of the run's outermost-op time, percent.
    round(100.0 * coalesce(op_ns, 0) / nullif(sum(op_ns) OVER (PARTITION BY run_id), 0), 2) AS op_pct
FROM joined
ORDER BY run_id, coalesce(kernel_ns, 0) DESC, coalesce(op_ns, 0) DESC, category;
