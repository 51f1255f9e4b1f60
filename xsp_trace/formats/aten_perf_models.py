"""Which ATen ops have a FLOP/byte model, and where their operands sit in the profiler's argument lists.

The models follow TraceLens' perf models (AMD-AGI/TraceLens, TraceLens/PerfModel/perf_model.py),
the anchor the issue names; the formulas themselves live in queries/analyses/prelude.sql
(xsp_op_perf) and use these positions:

- gemm (mm, addmm; bmm, baddbmm with a batch): A is M x K, B is K x N (batched: B x M x K, B x K x N).
  FLOPs = batch * (2*M*N*K + M*N if the op adds a bias); bytes = A + B + output + bias (N elements),
  all at A's element size (as TraceLens does).
- sdpa (the flash / efficient / cuDNN scaled-dot-product-attention forward ops): q is B x H_Q x N_Q x d,
  k and v are B x H_KV x N_KV x d. FLOPs = 4 * B * H_Q * N_Q * N_KV * d, halved when causal with N_Q = N_KV;
  bytes = q + k + v + output at q's element size.
- binary elementwise: FLOPs = elements of the broadcast output; bytes = both inputs (a 0-d operand counts as
  one element) + output at the wider input's size when both are tensors, else the first input's size.

`causal_arg` is the position of `is_causal` in "Concrete Inputs" (NULL: not causal or not recorded).
"""

from __future__ import annotations

from typing import NamedTuple


class OpModel(NamedTuple):
    model: str  # gemm, sdpa, binary
    a_arg: int  # 0-based position of the first operand in "Input Dims"
    b_arg: int | None  # second operand
    bias_arg: int | None  # gemm: the added matrix/vector (addmm, baddbmm)
    batched: bool  # gemm: bmm/baddbmm
    causal_arg: int | None  # sdpa: position of is_causal in "Concrete Inputs"


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
    **{f"aten::{op}{suffix}": OpModel("binary", 0, 1, None, False, None) for op in ("add", "sub", "mul", "div") for suffix in ("", "_")},
}
