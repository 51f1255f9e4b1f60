-- lib/op_lists: FLOPs and bytes of the ops whose operands are tensor lists (cat, stack, foreach
-- updates) and of the ops that launch collectives (record_param_comms), for lib/op_perf's rows.
-- include: lib/collectives
--
-- From: spans (kind op) and span_args "Input Dims" / "Input type" (a TensorList operand: one shape
-- per tensor), the element type in the names of the kernels the op launched (span_ancestors;
-- patterns from xsp_trace/formats/aten_list_models.py, which also gives TEMP xsp_list_op_models),
-- dtype sizes (TEMP xsp_dtype_bytes) and xsp_collective_messages (lib/collectives).
-- Formulas: docs/perf_models.md.

-- Every TensorList op (xsp_op_models' tensor_list ops) with its element count and element size.
CREATE OR REPLACE TEMP VIEW _xsp_list_ops AS
WITH ops AS (
    SELECT s.run_id, s.span_id, s.name, s.iteration, TRY_CAST(d.value AS JSON) AS dims,
        TRY_CAST(TRY_CAST(t.value AS JSON) AS VARCHAR[]) AS types, lm.flops_per_element, lm.self_written_only
    FROM spans AS s
    JOIN xsp_op_models AS m ON m.op_name = s.name AND m.model = 'tensor_list'
    LEFT JOIN xsp_list_op_models AS lm ON lm.op_name = s.name
    LEFT JOIN span_args AS d ON d.run_id = s.run_id AND d.span_id = s.span_id AND d.key = getvariable('xsp_arg_input_dims')
    LEFT JOIN span_args AS t ON t.run_id = s.run_id AND t.span_id = s.span_id AND t.key = getvariable('xsp_arg_input_type')
    WHERE s.kind = 'op'
), kernel_types AS (
    -- the element size its kernels name: a byte count (OpaqueType<4u>) or a C++ type (float)
    SELECT an.run_id, an.ancestor_id AS span_id,
        mode(nullif(regexp_extract(k.name, getvariable('xsp_kernel_element_bytes'), 1), '')) AS opaque_bytes,
        mode(nullif(regexp_extract(k.name, getvariable('xsp_kernel_element_type'), 1), '')) AS type_name
    FROM span_ancestors AS an
    JOIN ops AS o ON o.run_id = an.run_id AND o.span_id = an.ancestor_id
    JOIN spans AS k ON k.run_id = an.run_id AND k.span_id = an.span_id AND k.kind = 'kernel'
    GROUP BY ALL
)
SELECT o.*,
    -- the shapes of the first TensorList operand (NULL before PyTorch 2, which wrote [])
    nullif(TRY_CAST(json_extract(o.dims, '$[' || (list_position(o.types, 'TensorList') - 1) || ']') AS BIGINT[][]), []) AS first_list,
    len(list_filter(o.types, lambda x: x = 'TensorList')) AS lists,
    coalesce(CASE WHEN kt.opaque_bytes IS NOT NULL THEN 'OpaqueType<' || kt.opaque_bytes || '>' END, kt.type_name) AS element_type,
    coalesce(TRY_CAST(kt.opaque_bytes AS INTEGER), (SELECT db.bytes FROM xsp_dtype_bytes AS db WHERE db.dtype_key = lower(kt.type_name))) AS bpe
FROM ops AS o
LEFT JOIN kernel_types AS kt USING (run_id, span_id);

-- FLOPs and bytes of each TensorList op (lib/op_perf's _xsp_op_flops columns).
CREATE OR REPLACE TEMP VIEW xsp_op_list_flops AS
WITH counted AS (
    SELECT *, CAST(list_sum(list_transform(first_list, lambda s: coalesce(list_product(s), 1))) AS DOUBLE) AS n
    FROM _xsp_list_ops
)
SELECT
    -- Run.
    run_id,
    -- The op span.
    span_id,
    -- Op name.
    name,
    -- Its iteration.
    iteration,
    -- Its model (lib/op_perf's model column).
    'tensor_list' AS model,
    -- The element type its kernels name (float, c10::BFloat16, OpaqueType<4>: a size in bytes only).
    element_type AS dtype,
    -- Why it cannot be counted (NULL: it can).
    CASE WHEN dims IS NULL THEN 'no_shapes'
         WHEN flops_per_element IS NULL THEN 'no_list_model'
         WHEN first_list IS NULL OR bpe IS NULL THEN 'tensor_list' END AS missing_key,
    -- FLOPs: per element x n (cat, stack, copies: 0).
    flops_per_element * n AS flops,
    -- Bytes: (lists read + the list written) x n x element size.
    (lists - CASE WHEN self_written_only THEN 1 ELSE 0 END + 1) * n * bpe AS bytes,
    -- Roof class: the vector peak.
    'vector' AS unit
FROM counted;

-- The op that launched each collective kernel (its nearest enclosing op: record_param_comms), with
-- FLOPs 0 and the bytes nccl-tests' bus bandwidth counts: message bytes x the bus factor
-- (all_reduce 2(n-1)/n, all_gather / reduce_scatter / all_to_all (n-1)/n, others 1).
CREATE OR REPLACE TEMP VIEW xsp_op_collective_flops AS
WITH owner AS (
    SELECT m.run_id, m.span_id AS kernel_id, arg_min(an.ancestor_id, an.distance) AS span_id,
        any_value(m.message_bytes * m.busbw_factor) AS bus_bytes, any_value(m.dtype) AS dtype
    FROM xsp_collective_messages AS m
    JOIN span_ancestors AS an ON an.run_id = m.run_id AND an.span_id = m.span_id
    JOIN spans AS o ON o.run_id = an.run_id AND o.span_id = an.ancestor_id AND o.kind = 'op'
    GROUP BY m.run_id, m.span_id
)
SELECT
    -- Run.
    w.run_id,
    -- The op span (the launching op).
    w.span_id,
    -- Op name.
    s.name,
    -- Its iteration.
    s.iteration,
    -- Its model (lib/op_perf's model column).
    'collective' AS model,
    -- The element type the collective names.
    any_value(w.dtype) AS dtype,
    -- Why it cannot be counted: a kernel without a message size or rank count (NULL: it can).
    CASE WHEN count(w.bus_bytes) < count(*) THEN 'no_message_size' END AS missing_key,
    -- FLOPs: none (a reduction's adds are not counted, as nccl-tests counts none).
    0.0 AS flops,
    -- Bytes on the bus: message bytes x nccl-tests' bus factor, over its collective kernels.
    sum(w.bus_bytes) AS bytes,
    -- Roof class: the interconnect.
    'network' AS unit
FROM owner AS w
JOIN spans AS s ON s.run_id = w.run_id AND s.span_id = w.span_id
WHERE s.name NOT IN (SELECT op_name FROM xsp_op_models)
GROUP BY w.run_id, w.span_id, s.name, s.iteration;
