"""One vocabulary of op categories -- GEMM, conv, attention, norm, elementwise, reduction,
communication, memory, other (the breakdown TraceLens users read first) -- and the name patterns
that put a framework op or a GPU kernel into one.

An op with a perf model (aten_perf_models.OP_MODELS) takes its model's category (MODEL_CATEGORY);
any other op the first OP_PATTERNS entry its name matches. A kernel takes the first KERNEL_PATTERNS
entry its name matches; a kernel whose name says nothing takes its launching op's category (the
nearest op above it); copies and sets (memcpy/memset spans) are
`memory`. Patterns are DuckDB regular expressions (RE2), searched anywhere in the name, case-
insensitive; the first match in list order wins, so the narrower patterns come first.

Softmax is a normalisation along one dimension (a max, a sum and a division per row), so it is
counted with the norms; copies, concatenations, gathers and fills move memory without arithmetic,
so they are `memory`, as memcpy and memset are; optimizer updates (foreach, fused Adam/SGD) are
elementwise.
"""

from __future__ import annotations

CATEGORIES = ("GEMM", "conv", "attention", "norm", "elementwise", "reduction", "communication", "memory", "other")

MODEL_CATEGORY: dict[str, str] = {
    "gemm": "GEMM",
    "sdpa": "attention",
    "conv": "conv",
    "conv_bwd": "conv",
    "conv_bwd_legacy": "conv",
    "binary": "elementwise",
    "unary": "elementwise",
    "reduce": "reduction",
    "scan": "reduction",
    "mse_loss": "elementwise",  # its reduction is the aten::mean inside it
    "mse_loss_bwd": "elementwise",
    "softmax": "norm",
    "softmax_bwd": "norm",
    **{f"{norm}{suffix}": "norm" for norm in ("batch_norm", "layer_norm", "group_norm", "rms_norm") for suffix in ("", "_bwd")},
    "fill": "memory",
    "gather": "memory",
    "collective": "communication",
    # tensor_list (cat and stack: memory; foreach and fused optimizers: elementwise) by OP_PATTERNS
}

# (pattern, category) for op names, in order.
OP_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        r"^(nccl:|c10d::|_c10d_functional::|record_param_comms|symm_mem::)|^(aten::)?(all_reduce|all_gather|reduce_scatter|all_to_all)",
        "communication",
    ),
    (r"_foreach_|_fused_(adam|adamw|sgd|adagrad)|optimizer\.step|^Optimizer\.", "elementwise"),
    (r"attention|attn|flash|fmha|sdpa|mha_", "attention"),
    (r"convolution|conv[123]d|conv_transpose|conv_depthwise|miopen_conv|cudnn_conv", "conv"),
    (r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|addmv|mv|dot|einsum|_scaled_mm|_int_mm)$|gemm", "GEMM"),
    (r"^aten::(norm|linalg_vector_norm|linalg_norm)$", "reduction"),
    (r"rotary|rope", "elementwise"),
    (r"embedding|^fbgemm::(permute|.*bucketize|.*recat)", "memory"),
    (r"norm|softmax", "norm"),
    (
        r"^aten::(sum|mean|max|min|amax|amin|argmax|argmin|prod|std|var|var_mean|std_mean|logsumexp|cumsum|cumprod|all|any|topk|sort"
        r"|nll_loss|nll_loss_forward|nll_loss_backward|mse_loss|cross_entropy_loss)$",
        "reduction",
    ),
    (
        r"^aten::(copy_|_to_copy|to|clone|contiguous|cat|stack|index_select|embedding|embedding_dense_backward|index|index_put_"
        r"|gather|scatter|scatter_add_|fill_|zero_|zeros|ones|full|empty|empty_strided|arange|masked_select|nonzero|repeat|pad"
        r"|constant_pad_nd)$|^Memcpy|^Memset",
        "memory",
    ),
    (r"^aten::", "elementwise"),
)

# (pattern, category) for kernel names, in order. Kernel names that say nothing (a Triton kernel, a
# generic at::native launcher of an unknown functor) fall through to the launching op.
KERNEL_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"^nccl|^rccl|ncclDevKernel|cross_device_reduce|multimem|allreduce|all_reduce|allgather|reducescatter", "communication"),
    (r"flash|fmha|attention|attn_|_mha_|sdpa|mha_fwd|mha_bwd", "attention"),
    (r"fprop|dgrad|wgrad|implicit_gemm|convolve|conv2d|conv3d|conv1d|winograd|miopen.*conv|naive_conv|im2col|col2im|depthwise", "conv"),
    (r"gemm|Cijk_|nvjet|cublas|cutlass|matmul|splitKreduce|_mm_|^bmm_|triton_.*mm", "GEMM"),
    (r"rotary|rope_", "elementwise"),
    (r"softmax|layer_?norm|batch_?norm|group_?norm|rms_?norm|welford|bn_fw|bn_bw|batchnorm|MIOpenBatchNorm|norm_kernel", "norm"),
    (
        r"CatArrayBatchedCopy|direct_copy|copy_kernel|indexSelect|index_select|gather|scatter|fill_kernel|FillFunctor|memcpy|memset|embedding",
        "memory",
    ),
    (r"reduce_kernel|reduction|Reduce|cub::|argmax|argmin|cumsum|scan", "reduction"),
    (r"elementwise|pointwise|triton_poi|unrolled|vectorized|Functor|activation", "elementwise"),
)
