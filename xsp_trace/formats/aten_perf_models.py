"""Which ATen ops have a FLOP/byte model, and where their operands sit in the profiler's argument lists.

The models follow TraceLens' perf models (AMD-AGI/TraceLens, TraceLens/PerfModel/perf_model.py),
the anchor the issue names; the formulas themselves live in queries/lib/op_perf.sql
(xsp_op_perf) and use these positions:

- gemm (mm, addmm; bmm, baddbmm with a batch): A is M x K, B is K x N (batched: B x M x K, B x K x N).
  FLOPs = batch * (2*M*N*K + M*N if the op adds a bias); bytes = A + B + output + bias (N elements),
  all at A's element size (as TraceLens does).
- sdpa (the flash / efficient / cuDNN scaled-dot-product-attention forward ops): q is B x H_Q x N_Q x d,
  k and v are B x H_KV x N_KV x d. FLOPs = 4 * B * H_Q * N_Q * N_KV * d, halved when causal with N_Q = N_KV;
  bytes = q + k + v + output at q's element size.
- binary elementwise: FLOPs = elements of the broadcast output; bytes = both inputs (a 0-d operand counts as
  one element) + output at the wider input's size when both are tensors, else the first input's size.
- conv, conv_bwd (1d/2d/3d, any groups, stride, padding, dilation, transposed; torch.utils.flop_counter's
  formulas as TraceLens applies them): x is N x C_in x spatial, w is C_out x C_in/groups x kernel (transposed:
  C_in x C_out/groups x kernel); the output's spatial size is (in + 2p - d(k-1) - 1) / s + 1, truncated
  (transposed: (in - 1)s - 2p + d(k-1) + output_padding + 1), its channels w[0] (transposed: w[1], as
  TraceLens has it: C_out/groups, so a grouped transposed conv's output bytes are counted per group).
  Forward FLOPs = 2 * numel(w[1:]) * numel(out) (transposed: numel(x)); bytes = x + w + out.
  Backward FLOPs = grad-input (2 * numel(w[1:]) * numel(out), transposed numel(x)) + grad-weight
  (2 * numel(w) * numel(out) / out[1], transposed numel(x) / x[1]) + numel(out) when a bias gradient is
  asked for; bytes = 2 * (grad_out + x + w) (+ grad_out + out[1] for the bias), all at x's element size.
  Like TraceLens, the forward never counts a bias (its test `len(Input Dims) == 3` is never true of
  aten::convolution's nine operands) and the backward counts one only when "Input Dims" has a shape at
  `bias_arg` (bias_sizes is an int list, recorded as []), so neither does in the traces seen so far.
  So the bias add_ that aten::convolution runs inside itself (cuDNN, MIOpen) is counted as its own
  binary op, as TraceLens does, and the conv op is counted although it encloses a modelled op
  (`outer_counted`); each kernel's time goes to its nearest counted op only.

`causal_arg` is the position of `is_causal` in "Concrete Inputs" (NULL: not causal or not recorded).
`params_arg` is the position of `stride` in "Concrete Inputs"; padding, dilation, transposed,
output_padding and groups follow it in that order (aten::convolution and aten::convolution_backward share
the order).

Convolution ops in Kineto traces, forward: aten::conv1d/conv2d/conv3d/conv_transpose*d (Python entry
points, no padding mode resolved) -> aten::convolution (modelled: one signature for every backend) ->
aten::_convolution -> the backend op (aten::cudnn_convolution, aten::cudnn_convolution_transpose,
aten::miopen_convolution, aten::miopen_depthwise_convolution, aten::thnn_conv2d /
aten::_slow_conv2d_forward on CPU, aten::mkldnn_convolution ...). Backward since PyTorch 1.11:
ConvolutionBackward0 -> aten::convolution_backward (modelled), which calls the backend directly;
before 1.11 the autograd node called backend ops (aten::cudnn_convolution_backward,
aten::miopen_convolution_backward, aten::thnn_conv2d_backward). The first two are modelled as
conv_bwd_legacy: conv_bwd's formulas (grad-input and grad-weight, no bias, not transposed) with the
output's shape taken from the recorded grad_output, since no "Concrete Inputs" give the stride and
padding; their children (..._backward_input, ..._backward_weight) record neither x nor the weight size.
"Concrete Inputs" (the stride/padding/... values) is recorded with record_shapes since PyTorch 2.1; a
trace with "Input Dims" but no "Concrete Inputs" gets no conv FLOPs (NOT_MODELLED_REASONS says why).
"""

from __future__ import annotations

from typing import NamedTuple

from .aten_vector_models import OUTER_COUNTED, VECTOR_OP_MODELS


class OpModel(NamedTuple):
    model: str  # gemm, sdpa, binary, conv, conv_bwd, and the vector models of aten_vector_models.py
    a_arg: int  # 0-based position of the first operand in "Input Dims" (conv: the input x)
    b_arg: int | None  # second operand (conv: the weight)
    bias_arg: int | None  # gemm: the added matrix/vector (addmm, baddbmm); conv: the bias (sizes)
    batched: bool  # gemm: bmm/baddbmm
    causal_arg: int | None  # sdpa: position of is_causal in "Concrete Inputs"
    params_arg: int | None = None  # conv: position of stride in "Concrete Inputs"
    outer_counted: bool = False  # counted even when it encloses another modelled op


OP_MODELS: dict[str, OpModel] = {
    "aten::mm": OpModel("gemm", 0, 1, None, False, None),
    "aten::addmm": OpModel("gemm", 1, 2, 0, False, None),
    "aten::bmm": OpModel("gemm", 0, 1, None, True, None),
    "aten::baddbmm": OpModel("gemm", 1, 2, 0, True, None),
    # (query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
    "aten::_scaled_dot_product_flash_attention": OpModel("sdpa", 0, 1, None, False, 4),
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale)
    "aten::_scaled_dot_product_efficient_attention": OpModel("sdpa", 0, 1, None, False, 6),
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, *, scale)
    "aten::_scaled_dot_product_cudnn_attention": OpModel("sdpa", 0, 1, None, False, 6),
    # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    "aten::convolution": OpModel("conv", 0, 1, 2, False, None, 3, True),
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
    #  output_mask)
    "aten::convolution_backward": OpModel("conv_bwd", 1, 2, 3, False, None, 4, True),
    # before PyTorch 1.11 (self, grad_output, weight, padding, stride, dilation, groups, ...): no "Concrete
    # Inputs", but the output's shape is grad_output's, which is recorded
    **{
        f"aten::{op}": OpModel("conv_bwd_legacy", 0, 2, None, False, None, None, True)
        for op in ("cudnn_convolution_backward", "miopen_convolution_backward")
    },
    **{f"aten::{op}{suffix}": OpModel("binary", 0, 1, None, False, None) for op in ("add", "sub", "mul", "div") for suffix in ("", "_")},
    **{name: OpModel(model, a, b, None, False, None, params, name in OUTER_COUNTED) for name, (model, a, b, params) in VECTOR_OP_MODELS.items()},
}

# Why a modelled op gets no FLOPs (reported in xsp_op_perf.not_modelled_reason, FLOPs and bytes NULL).
NOT_MODELLED_REASONS: dict[str, str] = {
    "no_shapes": 'no "Input Dims" recorded (profile with record_shapes=True)',
    "no_concrete_inputs": 'no "Concrete Inputs" recorded (convolution stride and padding, norm flags: PyTorch 2.1+ with record_shapes)',
    "unknown_dtype": "element type not known to xsp_trace/formats/torch_dtypes.py",
    "mixed_dtypes": "input and weight have different element types (TraceLens models neither)",
    "bad_shapes": "operand shapes do not fit the model",
    # (short: terminal tables show them in one line; docs/perf_models.md says more)
    "tensor_list": "TensorList recorded without its tensors' shapes ([]), or no element type in its kernels' names",
    "no_list_model": "TensorList op without a model (fused optimizer step)",
    "no_message_size": "collective without a message size, dtype or rank count in the trace",
    "counted_inside": "an inner op is counted instead",
    "no_model": "no perf model for this op",
}
