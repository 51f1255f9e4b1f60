-- analyses/prelude_op_perf: FLOPs and bytes of every framework op that has a perf model, from the
-- shapes and dtypes the profiler recorded, with the GPU kernel time it launched -- the building
-- block of the shape-based roofline and MFU analyses (no Nsight Compute needed).
--
-- From: spans (kind op) and their span_args "Input Dims" / "Input type" / "Concrete Inputs"
-- (Kineto with record_shapes; argument names in variables set from xsp_trace/formats), the op
-- models of xsp_trace/formats/aten_perf_models.py (TEMP _xsp_op_models: which ops, where their
-- operands are), dtype sizes and precision classes (TEMP _xsp_dtype_bytes from
-- xsp_trace/formats/torch_dtypes.py), span_ancestors (kernels under an op), and the dense matrix
-- peaks per precision (TEMP _xsp_matrix_peaks from xsp_trace/formats/device_peaks.py).
-- The formulas follow TraceLens' perf models (see aten_perf_models.py).

-- Every modelled op span with its operand shapes, types and concrete inputs, parsed.
CREATE OR REPLACE TEMP VIEW _xsp_op_operands AS
SELECT
    s.run_id, s.span_id, s.name, s.iteration, m.model, m.bias_arg IS NOT NULL AS has_bias, m.batched,
    TRY_CAST(TRY_CAST(d.value AS JSON) AS BIGINT[][]) AS dims,
    TRY_CAST(TRY_CAST(t.value AS JSON) AS VARCHAR[]) AS types,
    TRY_CAST(TRY_CAST(c.value AS JSON) AS VARCHAR[]) AS concrete,
    m.a_arg + 1 AS a, m.b_arg + 1 AS b, m.causal_arg + 1 AS causal_at
FROM spans AS s
JOIN _xsp_op_models AS m ON m.op_name = s.name
JOIN span_args AS d ON d.run_id = s.run_id AND d.span_id = s.span_id AND d.key = getvariable('xsp_arg_input_dims')
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

-- Bytes per element of a profiler dtype name (NULL when unknown).
CREATE OR REPLACE TEMP MACRO _xsp_bpe(dtype) AS
    (SELECT db.bytes FROM _xsp_dtype_bytes AS db WHERE db.dtype_key = lower(dtype));

-- Precision class of a profiler dtype name (fp32, bf16, ...; NULL when unknown).
CREATE OR REPLACE TEMP MACRO _xsp_precision(dtype) AS
    (SELECT db.precision FROM _xsp_dtype_bytes AS db WHERE db.dtype_key = lower(dtype));

-- Modelled ops that enclose another modelled op (aten::addmm under a modelled caller): only the
-- innermost is counted, so no FLOP is counted twice.
CREATE OR REPLACE TEMP VIEW _xsp_op_enclosing_models AS
SELECT DISTINCT an.run_id, an.ancestor_id AS span_id
FROM span_ancestors AS an
JOIN _xsp_op_operands AS inner_op ON inner_op.run_id = an.run_id AND inner_op.span_id = an.span_id;

-- FLOPs and bytes of each innermost modelled op, by model.
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
)
SELECT run_id, span_id, name, iteration, model, types[a] AS dtype,
    CAST(bt * (2 * m * n * k + CASE WHEN has_bias THEN m * n ELSE 0 END) AS DOUBLE) AS flops,
    CAST(bt * (m * k + k * n + m * n + CASE WHEN has_bias THEN n ELSE 0 END) * _xsp_bpe(types[a]) AS DOUBLE) AS bytes,
    'matrix' AS unit
FROM gemm_dims
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a],
    CAST(q[1] * q[2] * (2 * q[3] * kk[3] * q[4] + 2 * q[3] * kk[3] * v[4]) AS DOUBLE)
        / CASE WHEN causal AND q[3] = kk[3] THEN 2 ELSE 1 END,
    CAST((q[1] * q[3] * q[2] * q[4] + kk[1] * kk[3] * kk[2] * kk[4] + v[1] * v[3] * v[2] * v[4]
          + q[1] * q[3] * q[2] * v[4]) * _xsp_bpe(types[a]) AS DOUBLE),
    'matrix'
FROM sdpa
UNION ALL
SELECT run_id, span_id, name, iteration, model, types[a],
    CAST(_xsp_broadcast_numel(s1, s2) AS DOUBLE),
    CAST(_xsp_numel(s1) * bpe1 + _xsp_numel(s2) * bpe2
         + _xsp_broadcast_numel(s1, s2) * coalesce(bpe_out_arg, CASE WHEN len(s1) > 0 AND len(s2) > 0
                                                                       THEN greatest(bpe1, bpe2) ELSE bpe1 END) AS DOUBLE),
    'vector'
FROM elementwise;

-- Every innermost modelled op: FLOPs, bytes and the GPU kernels it launched.
CREATE OR REPLACE TEMP VIEW xsp_op_perf AS
WITH kernels_under AS (
    SELECT an.run_id, an.ancestor_id AS span_id, count(*) AS kernels,
           sum(k.end_ns - k.start_ns) AS kernel_ns, min(k.device_id) AS device_id
    FROM span_ancestors AS an
    JOIN spans AS k ON k.run_id = an.run_id AND k.span_id = an.span_id AND k.kind = 'kernel'
    GROUP BY ALL
)
SELECT
    f.run_id, f.span_id, f.name, f.iteration, f.model, f.dtype, _xsp_precision(f.dtype) AS precision, f.unit,
    f.flops, f.bytes, coalesce(ku.kernels, 0) AS kernels, coalesce(ku.kernel_ns, 0) AS kernel_ns, ku.device_id,
    (SELECT d.value FROM span_args AS d
     WHERE d.run_id = f.run_id AND d.span_id = f.span_id AND d.key = getvariable('xsp_arg_input_dims')) AS input_dims
FROM _xsp_op_flops AS f
LEFT JOIN kernels_under AS ku USING (run_id, span_id)
WHERE NOT EXISTS (SELECT 1 FROM _xsp_op_enclosing_models AS e WHERE e.run_id = f.run_id AND e.span_id = f.span_id);

-- The roof for an op on its device: the dense matrix peak of its precision for matrix ops (GEMM,
-- attention), the FP32 vector peak for elementwise ops, and the DRAM bandwidth.
CREATE OR REPLACE TEMP VIEW _xsp_op_roof AS
SELECT o.run_id, o.span_id,
    CASE WHEN o.unit = 'matrix' THEN mp.peak_flops ELSE d.peak_flops END AS peak_flops,
    d.peak_dram_bytes_per_s
FROM xsp_op_perf AS o
LEFT JOIN devices AS d ON d.run_id = o.run_id AND d.device_id = o.device_id
LEFT JOIN _xsp_matrix_peaks AS mp ON mp.run_id = o.run_id AND mp.device_id = o.device_id AND mp.precision = o.precision;
