-- lib/op_perf: FLOPs and bytes of every framework op that has a perf model, from the
-- shapes and dtypes the profiler recorded, with the GPU kernel time it launched -- the building
-- block of the shape-based roofline and MFU analyses (no Nsight Compute needed).
-- include: lib/op_vector_models, lib/op_lists
--
-- From: spans (kind op) and their span_args "Input Dims" / "Input type" / "Concrete Inputs"
-- (Kineto with record_shapes; argument names in variables set from xsp_trace/formats), the op
-- models of xsp_trace/formats/aten_perf_models.py (TEMP xsp_op_models: which ops, where their
-- operands are), dtype sizes and precision classes (TEMP xsp_dtype_bytes from
-- xsp_trace/formats/torch_dtypes.py), span_ancestors (kernels under an op), and the dense matrix
-- peaks per precision (TEMP xsp_matrix_peaks from xsp_trace/formats/device_peaks.py).
-- The formulas follow TraceLens' perf models (see aten_perf_models.py).

-- Every modelled op span with its operand shapes, types and concrete inputs, parsed (NULL when the
-- profiler did not record them: such an op keeps a row, with the reason, and no FLOPs).
CREATE OR REPLACE TEMP VIEW _xsp_op_operands AS
SELECT
    s.run_id, s.span_id, s.name, s.iteration, m.model, m.bias_arg IS NOT NULL AS has_bias, m.batched,
    TRY_CAST(TRY_CAST(d.value AS JSON) AS BIGINT[][]) AS dims,
    TRY_CAST(TRY_CAST(t.value AS JSON) AS VARCHAR[]) AS types,
    TRY_CAST(TRY_CAST(c.value AS JSON) AS VARCHAR[]) AS concrete,
    m.a_arg + 1 AS a, m.b_arg + 1 AS b, m.bias_arg + 1 AS bias_at, m.causal_arg + 1 AS causal_at,
    m.params_arg + 1 AS params_at,
    CASE WHEN d.value IS NULL THEN 'no_shapes'
         WHEN m.params_arg IS NOT NULL AND c.value IS NULL THEN 'no_concrete_inputs'
    END AS missing_key
FROM spans AS s
JOIN xsp_op_models AS m ON m.op_name = s.name
LEFT JOIN span_args AS d ON d.run_id = s.run_id AND d.span_id = s.span_id AND d.key = getvariable('xsp_arg_input_dims')
LEFT JOIN span_args AS t ON t.run_id = s.run_id AND t.span_id = s.span_id AND t.key = getvariable('xsp_arg_input_type')
LEFT JOIN span_args AS c ON c.run_id = s.run_id AND c.span_id = s.span_id AND c.key = getvariable('xsp_arg_concrete_inputs')
WHERE s.kind = 'op';

-- Elements of a shape (a 0-d tensor, [], holds one).
CREATE OR REPLACE TEMP MACRO _xsp_numel(shape) AS coalesce(list_product(shape), 1);

-- Elements of the broadcast of two shapes (right-aligned, missing dimensions are 1).
CREATE OR REPLACE TEMP MACRO _xsp_broadcast_numel(s1, s2) AS
    coalesce(list_product(list_transform(range(1, greatest(len(s1), len(s2)) + 1),
        lambda i: greatest(CASE WHEN i <= len(s1) THEN s1[len(s1) - i + 1] ELSE 1 END,
                      CASE WHEN i <= len(s2) THEN s2[len(s2) - i + 1] ELSE 1 END))), 1);

-- A conv parameter (stride, padding, dilation, output_padding) per spatial dimension from its
-- "Concrete Inputs" text: "" means the default, a single value applies to every dimension.
CREATE OR REPLACE TEMP MACRO _xsp_conv_param(text, ndims, default_value) AS
    CASE WHEN coalesce(text, '') = '' THEN list_transform(range(ndims), lambda i: default_value)
         WHEN len(TRY_CAST(TRY_CAST(text AS JSON) AS BIGINT[])) = 1
         THEN list_transform(range(ndims), lambda i: TRY_CAST(TRY_CAST(text AS JSON) AS BIGINT[])[1])
         ELSE TRY_CAST(TRY_CAST(text AS JSON) AS BIGINT[]) END;

-- Bytes per element of a profiler dtype name (NULL when unknown).
CREATE OR REPLACE TEMP MACRO _xsp_bpe(dtype) AS
    (SELECT db.bytes FROM xsp_dtype_bytes AS db WHERE db.dtype_key = lower(dtype));

-- Precision class of a profiler dtype name (fp32, bf16, ...; NULL when unknown).
CREATE OR REPLACE TEMP MACRO _xsp_precision(dtype) AS
    (SELECT db.precision FROM xsp_dtype_bytes AS db WHERE db.dtype_key = lower(dtype));

-- Modelled ops that enclose another modelled op of the same kind, matrix or vector (aten::addmm
-- under a modelled caller, aten::layer_norm around aten::native_layer_norm): only the innermost is
-- counted, so no FLOP is counted twice -- except ops whose model leaves out what they enclose (a
-- convolution and its bias add_; a GEMM and the fill_ or copy_ it runs), which are counted beside it.
CREATE OR REPLACE TEMP VIEW _xsp_op_enclosing_models AS
SELECT DISTINCT an.run_id, an.ancestor_id AS span_id
FROM span_ancestors AS an
JOIN _xsp_op_operands AS inner_op ON inner_op.run_id = an.run_id AND inner_op.span_id = an.span_id
JOIN spans AS outer_op ON outer_op.run_id = an.run_id AND outer_op.span_id = an.ancestor_id
JOIN xsp_op_models AS m ON m.op_name = outer_op.name
WHERE NOT m.outer_counted
  AND (m.model IN ('gemm', 'sdpa') OR m.model LIKE 'conv%') = (inner_op.model IN ('gemm', 'sdpa') OR inner_op.model LIKE 'conv%');

-- Convolutions (forward and backward): input x, weight w, output shape, parameters.
CREATE OR REPLACE TEMP VIEW _xsp_conv_shapes AS
WITH parsed AS (
    SELECT *, dims[a] AS x, dims[b] AS w, len(dims[a]) - 2 AS ndims,
        lower(concrete[params_at + 3]) = 'true' AS transposed,
        -- forward: never (TraceLens' test len(Input Dims) == 3 never holds for nine operands);
        -- backward: a recorded shape at bias_sizes
        model = 'conv_bwd' AND len(dims) >= bias_at AND len(dims[bias_at]) > 0 AS with_bias
    FROM _xsp_op_operands WHERE model LIKE 'conv%' AND missing_key IS NULL
), params AS (
    SELECT *,
        _xsp_conv_param(concrete[params_at], ndims, 1) AS stride,
        _xsp_conv_param(concrete[params_at + 1], ndims, 0) AS padding,
        _xsp_conv_param(concrete[params_at + 2], ndims, 1) AS dilation,
        _xsp_conv_param(concrete[params_at + 4], ndims, 0) AS output_padding
    FROM parsed
)
SELECT *,
    -- conv_bwd_legacy (pre-1.11 backend backward ops): the output's shape is the recorded grad_output
    CASE WHEN model = 'conv_bwd_legacy' THEN dims[a + 1] ELSE
    [x[1], CASE WHEN transposed THEN w[2] ELSE w[1] END] || list_transform(range(1, ndims + 1), lambda i:
        CASE WHEN transposed
             THEN (x[i + 2] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[i + 2] - 1) + output_padding[i] + 1
             ELSE CAST(trunc((x[i + 2] + 2 * padding[i] - dilation[i] * (w[i + 2] - 1) - 1) / stride[i]) AS BIGINT) + 1
        END) END AS y
FROM params;

-- FLOPs and bytes of each modelled op, by model (NULL where the model cannot be applied).
CREATE OR REPLACE TEMP VIEW _xsp_op_flops AS
WITH gemm AS (
    SELECT *, dims[a] AS ma, dims[b] AS mb FROM _xsp_op_operands WHERE model = 'gemm'
), gemm_dims AS (
    SELECT *,
        CASE WHEN batched THEN ma[1] ELSE 1 END AS bt,
        CASE WHEN batched THEN ma[2] ELSE ma[1] END AS m,
        CASE WHEN batched THEN ma[3] ELSE ma[2] END AS k,
        CASE WHEN batched THEN mb[3] ELSE mb[2] END AS n
    FROM gemm
), sdpa AS (
    SELECT *, dims[a] AS q, dims[a + 1] AS kk, dims[a + 2] AS v,
        coalesce(lower(concrete[causal_at]) = 'true', false) AS causal
    FROM _xsp_op_operands WHERE model = 'sdpa'
), elementwise AS (
    SELECT *, dims[a] AS s1, dims[b] AS s2,
        _xsp_bpe(types[a]) AS bpe1, _xsp_bpe(types[b]) AS bpe2,
        -- an out= tensor, if the op was given one (TraceLens: a non-empty third operand)
        CASE WHEN len(dims) >= 3 AND len(dims[3]) > 0 THEN _xsp_bpe(types[3]) END AS bpe_out_arg
    FROM _xsp_op_operands WHERE model = 'binary'
), vector AS (
    -- the vector models (xsp_trace/formats/aten_vector_models.py): n elements of the main operand
    SELECT *, dims[a] AS x, CAST(_xsp_numel(dims[a]) AS DOUBLE) AS n, _xsp_bpe(types[a]) AS bpe,
        CASE WHEN len(dims) >= b AND len(dims[b]) > 0 THEN _xsp_bpe(types[b]) END AS bpe_second
    FROM _xsp_op_operands WHERE model NOT IN ('gemm', 'sdpa', 'binary') AND model NOT LIKE 'conv%'
), norm_params AS (
    -- TraceLens' Normalization flags as it reads them: "Input Dims" holds [] for an absent weight,
    -- never null, so every norm counts as affine with a bias; a training flag is any non-empty text.
    SELECT *,
        CASE WHEN model IN ('layer_norm', 'layer_norm_bwd', 'rms_norm', 'rms_norm_bwd')
             THEN CAST(_xsp_numel(TRY_CAST(TRY_CAST(concrete[params_at] AS JSON) AS BIGINT[])) AS DOUBLE)
             WHEN model = 'group_norm_bwd' THEN x[2] / TRY_CAST(concrete[params_at] AS DOUBLE)
             ELSE CAST(x[2] AS DOUBLE) END AS c,
        CASE WHEN model IN ('batch_norm', 'batch_norm_bwd') THEN coalesce(concrete[params_at], '') <> ''
             ELSE model NOT IN ('rms_norm', 'rms_norm_bwd') END AS training,
        TRY_CAST(TRY_CAST(lower(CASE model WHEN 'layer_norm_bwd' THEN concrete[params_at + 5]
                                           WHEN 'group_norm_bwd' THEN concrete[params_at + 1]
                                           WHEN 'rms_norm_bwd' THEN concrete[params_at + 3] END) AS JSON) AS BOOLEAN[]) AS output_mask
    FROM vector WHERE model LIKE '%norm%'
), norm AS (
    SELECT *,
        coalesce(output_mask[1], true) AS mask_input,
        CASE WHEN model = 'layer_norm_bwd' THEN output_mask[2] ELSE true END AS affine,
        CASE WHEN model = 'layer_norm_bwd' THEN output_mask[3] ELSE true END AS norm_bias
    FROM norm_params
), conv AS (
    SELECT *,
        -- multiply-adds per output element (forward, grad-input) = C_in/groups x kernel elements
        2 * _xsp_numel(w[2:]) * CASE WHEN transposed THEN _xsp_numel(x) ELSE _xsp_numel(y) END AS data_flops,
        -- grad-weight: every weight element against every (batch, spatial) position of y (transposed: x)
        2 * _xsp_numel(w) * CASE WHEN transposed THEN x[1] * _xsp_numel(x[3:]) ELSE y[1] * _xsp_numel(y[3:]) END AS weight_flops
    FROM _xsp_conv_shapes
)
SELECT run_id, span_id, name, iteration, model, types[a] AS dtype, missing_key,
    CAST(bt * (2 * m * n * k + CASE WHEN has_bias THEN m * n ELSE 0 END) AS DOUBLE) AS flops,
    CAST(bt * (m * k + k * n + m * n + CASE WHEN has_bias THEN n ELSE 0 END) * _xsp_bpe(types[a]) AS DOUBLE) AS bytes,
    'matrix' AS unit
FROM gemm_dims
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a], missing_key,
    CAST(q[1] * q[2] * (2 * q[3] * kk[3] * q[4] + 2 * q[3] * kk[3] * v[4]) AS DOUBLE)
        / CASE WHEN causal AND q[3] = kk[3] THEN 2 ELSE 1 END,
    CAST((q[1] * q[3] * q[2] * q[4] + kk[1] * kk[3] * kk[2] * kk[4] + v[1] * v[3] * v[2] * v[4]
          + q[1] * q[3] * q[2] * v[4]) * _xsp_bpe(types[a]) AS DOUBLE),
    'matrix'
FROM sdpa
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a], missing_key,
    CAST(_xsp_broadcast_numel(s1, s2) AS DOUBLE),
    CAST(_xsp_numel(s1) * bpe1 + _xsp_numel(s2) * bpe2
         + _xsp_broadcast_numel(s1, s2) * coalesce(bpe_out_arg, CASE WHEN len(s1) > 0 AND len(s2) > 0
                                                                       THEN greatest(bpe1, bpe2) ELSE bpe1 END) AS DOUBLE),
    'vector'
FROM elementwise
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a],
    CASE WHEN types[a] IS DISTINCT FROM types[b] THEN 'mixed_dtypes' END,
    CAST(data_flops + CASE WHEN model LIKE 'conv_bwd%' THEN weight_flops ELSE 0 END
         + CASE WHEN with_bias THEN _xsp_numel(y) ELSE 0 END AS DOUBLE),
    CAST((CASE WHEN model LIKE 'conv_bwd%' THEN 2 ELSE 1 END * (_xsp_numel(x) + _xsp_numel(w) + _xsp_numel(y))
          + CASE WHEN with_bias THEN _xsp_numel(y) + y[2] ELSE 0 END) * _xsp_bpe(types[a]) AS DOUBLE),
    'matrix'
FROM conv
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a], missing_key, NULL, NULL, 'matrix'
FROM _xsp_op_operands WHERE model LIKE 'conv%' AND missing_key IS NOT NULL
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a], missing_key,
    xsp_vector_flops(model, n),
    -- gather: n / the gathered dimension's size = elements of one row; mse_loss_bwd: grad_output's
    xsp_vector_bytes(model, n, bpe, bpe_second, _xsp_numel(dims[b]),
        CASE WHEN model = 'mse_loss_bwd' THEN _xsp_numel(dims[1]) ELSE n / x[coalesce(TRY_CAST(concrete[params_at] AS INTEGER), 0) + 1] END),
    'vector'
FROM vector WHERE model NOT LIKE '%norm%' AND model <> 'tensor_list'
UNION ALL
-- tensor lists and collectives (lib/op_lists)
SELECT * FROM xsp_op_list_flops
UNION ALL
SELECT * FROM xsp_op_collective_flops
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a], missing_key,
    xsp_norm_flops(model, n, c, training, mask_input, coalesce(output_mask[2], false)),
    xsp_norm_bytes(model, n, c, bpe, training, mask_input, affine, norm_bias),
    'vector'
FROM norm;

-- Every modelled op, each with its FLOPs and bytes, or NULL and the reason -- also one that encloses
-- a counted modelled op (reason counted_inside: its FLOPs are its inner op's).
CREATE OR REPLACE TEMP VIEW _xsp_op_counted AS
SELECT f.* EXCLUDE (missing_key, flops, bytes),
    CASE WHEN reason_key IS NULL THEN f.flops END AS flops,
    CASE WHEN reason_key IS NULL THEN f.bytes END AS bytes,
    k.reason_key
FROM _xsp_op_flops AS f,
LATERAL (SELECT CASE WHEN EXISTS (SELECT 1 FROM _xsp_op_enclosing_models AS e WHERE e.run_id = f.run_id AND e.span_id = f.span_id)
                     THEN 'counted_inside'
                     WHEN f.missing_key IS NOT NULL THEN f.missing_key
                     -- (a TensorList op's kernels may name a size only; a collective sized its message)
                     WHEN f.model NOT IN ('tensor_list', 'collective') AND _xsp_bpe(f.dtype) IS NULL THEN 'unknown_dtype'
                     WHEN f.flops IS NULL OR f.bytes IS NULL THEN 'bad_shapes' END AS reason_key) AS k;

-- Every op that launched kernels, with FLOPs and bytes where it has a model (NULL, with
-- not_modelled_reason, where the profiler did not record what the model needs, where it has none, or
-- where an inner op is counted instead) and the GPU kernels it launched -- each kernel charged to
-- its nearest row only. An op without a model gets a row when it is the innermost op above a kernel
-- no modelled op encloses (reason no_model).
CREATE OR REPLACE TEMP VIEW xsp_op_perf AS
WITH counted AS MATERIALIZED (
    SELECT * FROM _xsp_op_counted
), kernel_ancestors AS MATERIALIZED (
    SELECT an.run_id, an.span_id AS kernel_id, an.ancestor_id, an.distance, k.end_ns - k.start_ns AS kernel_ns, k.device_id
    FROM span_ancestors AS an
    JOIN spans AS k ON k.run_id = an.run_id AND k.span_id = an.span_id AND k.kind = 'kernel'
), orphan_launchers AS (
    SELECT DISTINCT ka.run_id, arg_min(ka.ancestor_id, ka.distance) AS span_id
    FROM kernel_ancestors AS ka
    JOIN spans AS o ON o.run_id = ka.run_id AND o.span_id = ka.ancestor_id AND o.kind = 'op'
    WHERE NOT EXISTS (SELECT 1 FROM kernel_ancestors AS k2 JOIN counted AS c ON c.run_id = k2.run_id AND c.span_id = k2.ancestor_id
                      WHERE k2.run_id = ka.run_id AND k2.kernel_id = ka.kernel_id)
    GROUP BY ka.run_id, ka.kernel_id
), op_rows AS MATERIALIZED (
    SELECT * FROM counted
    UNION ALL BY NAME
    SELECT s.run_id, s.span_id, s.name, s.iteration, CAST(NULL AS VARCHAR) AS model,
        (SELECT TRY_CAST(TRY_CAST(t.value AS JSON) AS VARCHAR[])[1] FROM span_args AS t
         WHERE t.run_id = s.run_id AND t.span_id = s.span_id AND t.key = getvariable('xsp_arg_input_type')) AS dtype,
        'vector' AS unit, CAST(NULL AS DOUBLE) AS flops, CAST(NULL AS DOUBLE) AS bytes, 'no_model' AS reason_key
    FROM orphan_launchers AS l JOIN spans AS s ON s.run_id = l.run_id AND s.span_id = l.span_id
), kernel_owner AS (
    SELECT ka.run_id, ka.kernel_id, arg_min(ka.ancestor_id, ka.distance) AS span_id,
           any_value(ka.kernel_ns) AS kernel_ns, any_value(ka.device_id) AS device_id
    FROM kernel_ancestors AS ka
    JOIN op_rows AS c ON c.run_id = ka.run_id AND c.span_id = ka.ancestor_id
    GROUP BY ka.run_id, ka.kernel_id
), kernels_under AS (
    SELECT run_id, span_id, count(*) AS kernels, sum(kernel_ns) AS kernel_ns, min(device_id) AS device_id
    FROM kernel_owner GROUP BY ALL
)
SELECT
    -- Run.
    f.run_id,
    -- The op span.
    f.span_id,
    -- Op name (aten::addmm, ...).
    f.name,
    -- Its iteration (step number).
    f.iteration,
    -- Perf model: gemm, sdpa, binary, conv, conv_bwd, or a vector model (unary, reduce, layer_norm, ...;
    -- xsp_trace/formats/aten_vector_models.py), tensor_list or collective (lib/op_lists); NULL: none.
    f.model,
    -- Dtype of its first operand, as the profiler names it.
    f.dtype,
    -- Precision class of that dtype (fp32, bf16, ...).
    _xsp_precision(f.dtype) AS precision,
    -- 'matrix' (GEMM, attention, conv: matrix peaks), 'vector' (elementwise, norms, reductions, ...) or
    -- 'network' (collectives: FLOPs 0, bytes on the bus).
    f.unit,
    -- FLOPs of the op (NULL: not modelled).
    f.flops,
    -- Bytes it moves (NULL: not modelled).
    f.bytes,
    -- Why it has no FLOPs (no model, the profiler did not record what the model needs, or an inner
    -- op is counted instead), else NULL.
    (SELECT r.reason FROM xsp_not_modelled_reasons AS r WHERE r.reason_key = f.reason_key) AS not_modelled_reason,
    -- That reason's key (no_model, no_shapes, counted_inside, ...: xsp_trace/formats/aten_perf_models.py).
    f.reason_key AS not_modelled_key,
    -- GPU kernels it launched (charged to the nearest counted op).
    coalesce(ku.kernels, 0) AS kernels,
    -- Their GPU time, ns.
    coalesce(ku.kernel_ns, 0) AS kernel_ns,
    -- The GPU they ran on.
    ku.device_id,
    -- The recorded operand shapes ("Input Dims").
    (SELECT d.value FROM span_args AS d
     WHERE d.run_id = f.run_id AND d.span_id = f.span_id AND d.key = getvariable('xsp_arg_input_dims')) AS input_dims
FROM op_rows AS f
LEFT JOIN kernels_under AS ku USING (run_id, span_id);
