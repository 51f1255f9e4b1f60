"""Which ATen ops beyond GEMM, attention and convolution have a FLOP/byte model, and where their
operands sit in the profiler's argument lists ("Input Dims" and "Concrete Inputs", 0-based).

The formulas live in queries/lib/op_perf.sql (`_xsp_op_flops`); docs/perf_models.md states each one
and its source. Models marked TraceLens follow AMD-AGI/TraceLens (TraceLens/PerfModel/perf_model.py,
torch_op_mapping.py at 171dd747) and are tested equal to it; the others are this project's own,
documented there.

Each entry: (model, tensor_arg, second_arg, param_arg)

- unary (TraceLens aten_unary_elementwise): tensor_arg is the input, second_arg an optional out/src
  tensor whose element size is the output's.
- binary (TraceLens aten_binary_elementwise): the two operands (a 0-d or Scalar operand counts as one
  element).
- reduce, scan (TraceLens aten_reduce): the reduced input.
- batch_norm / layer_norm / group_norm / rms_norm and their _bwd (TraceLens Normalization classes):
  tensor_arg is the normalised activation; param_arg the "Concrete Inputs" position of the
  training flag (batch_norm), the normalized_shape (layer_norm, rms_norm) or the group count
  (group_norm_bwd).
- softmax, softmax_bwd (TraceLens' Softmax formulas, which its op map does not use): the activation.
- fill (own): the tensor written.
- mse_loss, mse_loss_bwd (own): tensor_arg the input, second_arg the target. The forward runs its
  reduction as an aten::mean inside it (counted there), so it is counted beside what it encloses
  (OUTER_COUNTED), for its own elementwise kernel.
- gather (own: embedding lookup, index_select): tensor_arg the table, second_arg the indices,
  param_arg the "Concrete Inputs" position of the gathered dimension (NULL: dimension 0).
- tensor_list (cat, stack, foreach and fused optimizer updates): a TensorList operand has no element
  type in "Input type"; xsp_trace/formats/aten_list_models.py says where it is found instead and
  which of these ops have a model (queries/lib/op_lists.sql).
"""

from __future__ import annotations

_UNARY = (
    # TraceLens' unary_elemwise_ops
    "copy", "copy_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "sigmoid", "rsqrt", "silu", "neg", "pow",
)  # fmt: skip
# Same model, ops TraceLens has no entry for (one read, one write per element).
_UNARY_OWN = (
    "relu", "relu_", "gelu", "tanh", "exp", "log", "sqrt", "abs", "sigmoid_", "silu_", "neg_", "rsqrt_", "pow_",
    "tanh_", "exp_", "reciprocal", "sin", "cos", "clamp", "clamp_", "hardtanh", "hardtanh_", "leaky_relu",
    "leaky_relu_", "erf", "_to_copy", "clone",
)  # fmt: skip
_BINARY = ("sigmoid_backward", "threshold_backward")  # TraceLens' binary_elemwise_ops beyond add/sub/mul/div
_BINARY_OWN = ("gelu_backward", "silu_backward", "tanh_backward", "maximum", "minimum", "eq", "ne", "lt", "gt", "le", "ge")
_REDUCE = ("sum", "mean", "max", "min", "norm", "linalg_norm", "std", "var", "logsumexp", "amin", "amax")
_SCAN = ("cumsum", "cumprod")

VECTOR_OP_MODELS: dict[str, tuple[str, int, int | None, int | None]] = {
    **{f"aten::{op}": ("unary", 0, 1, None) for op in _UNARY + _UNARY_OWN},
    **{f"aten::{op}": ("binary", 0, 1, None) for op in _BINARY + _BINARY_OWN},
    **{f"aten::{op}": ("reduce", 0, None, None) for op in _REDUCE},
    **{f"aten::{op}": ("scan", 0, None, None) for op in _SCAN},
    # (input, weight, bias, running_mean, running_var, training, momentum, eps[, cudnn_enabled])
    **{f"aten::{op}": ("batch_norm", 0, None, 5) for op in ("batch_norm", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm")},
    # (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
    "aten::native_batch_norm_backward": ("batch_norm_bwd", 1, 0, 7),
    "aten::batch_norm_backward": ("batch_norm_bwd", 1, 0, 7),
    # (input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon[, reserve]): inference-mode stats
    "aten::cudnn_batch_norm_backward": ("batch_norm_bwd", 0, 1, None),
    "aten::miopen_batch_norm_backward": ("batch_norm_bwd", 0, 1, None),
    # (input, normalized_shape, weight, bias, eps[, cudnn_enable])
    **{f"aten::{op}": ("layer_norm", 0, None, 1) for op in ("layer_norm", "native_layer_norm")},
    # (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    **{f"aten::{op}": ("layer_norm_bwd", 1, 0, 2) for op in ("layer_norm_backward", "native_layer_norm_backward")},
    # group_norm (input, num_groups, weight, bias, ...); native_group_norm (input, weight, bias, N, C, HxW, group, eps)
    **{f"aten::{op}": ("group_norm", 0, None, None) for op in ("group_norm", "native_group_norm")},
    # (grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
    **{f"aten::{op}": ("group_norm_bwd", 1, 0, 8) for op in ("group_norm_backward", "native_group_norm_backward")},
    # (input, normalized_shape, weight, eps)
    "aten::_fused_rms_norm": ("rms_norm", 0, None, 1),
    # (grad_out, input, normalized_shape, rstd, weight, output_mask)
    "aten::_fused_rms_norm_backward": ("rms_norm_bwd", 1, 0, 2),
    # (self, dim, half_to_float)
    **{f"aten::{op}": ("softmax", 0, None, None) for op in ("_softmax", "_log_softmax")},
    # (grad_output, output, dim, input_dtype)
    **{f"aten::{op}": ("softmax_bwd", 1, 0, None) for op in ("_softmax_backward_data", "_log_softmax_backward_data")},
    # (self, target, reduction); backward (grad_output, self, target, reduction)
    "aten::mse_loss": ("mse_loss", 0, 1, None),
    "aten::mse_loss_backward": ("mse_loss_bwd", 1, 2, None),
    **{f"aten::{op}": ("fill", 0, None, None) for op in ("fill_", "zero_")},
    # (weight, indices, padding_idx, scale_grad_by_freq, sparse)
    "aten::embedding": ("gather", 0, 1, None),
    # (self, dim, index)
    "aten::index_select": ("gather", 0, 2, 1),
    **{
        f"aten::{op}": ("tensor_list", 0, None, None)
        for op in (
            "cat",
            "stack",
            "_foreach_add_",
            "_foreach_mul_",
            "_foreach_addcmul_",
            "_foreach_addcdiv_",
            "_foreach_div_",
            "_foreach_sqrt",
            "_foreach_lerp_",
            "_foreach_copy_",
            "_foreach_zero_",
            "_fused_adam_",
            "_fused_adamw_",
            "_fused_sgd_",
        )
    },  # fmt: skip
}

# Counted even when they enclose another modelled op: their model leaves out what they enclose.
OUTER_COUNTED = frozenset({"aten::mse_loss"})
