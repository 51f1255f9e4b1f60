"""TensorList ops (cat, stack, foreach updates) and collectives: what a trace records about them and
the element counts their perf models (queries/lib/op_lists.sql, docs/perf_models.md) read.

TensorList operands. Since PyTorch 2 "Input Dims" holds one shape per tensor of a list
(``[[[1, 559, 32], [1, 559, 32]], []]`` for aten::cat(tensors, dim)), but "Input type" says only
"TensorList": the element type is not recorded. The kernels the op launches name it in their
template arguments -- ``CatArrayBatchedCopy<float, ...>``, ``CatArrayBatchedCopy<OpaqueType<4u>, ...>``
(cat copies bytes, so it names their size), ``multi_tensor_apply_kernel<..., BinaryOpListAlphaFunctor<float,
2, 2, 0>, ...>`` (foreach) -- on CUDA and ROCm alike. Before PyTorch 2 a list was recorded as ``[]``.

Each entry: op -> (FLOPs per element, self_written_only). n = the elements of the first TensorList
operand (for cat and stack: of every input, which the output holds). Bytes = (lists read + 1
written) x n x element size, where lists read = the op's TensorList operands, less one when the op
only writes its first list (copy_, zero_); a Scalar operand moves nothing.
"""

from __future__ import annotations

LIST_OP_MODELS: dict[str, tuple[float, bool]] = {
    # copies: each input element read once and written once into the output
    "aten::cat": (0, False),
    "aten::stack": (0, False),
    # foreach (self, other list | scalar[, alpha]): one operation per element, self updated in place
    **{f"aten::_foreach_{op}": (1, False) for op in ("add_", "sub_", "mul_", "div_", "add", "sub", "mul", "div", "sqrt", "sqrt_")},
    # addcmul/addcdiv (self, t1, t2, value): multiply or divide, scale, add; lerp (self, end, weight): sub, mul, add
    **{f"aten::_foreach_{op}": (3, False) for op in ("addcmul_", "addcdiv_", "lerp_")},
    "aten::_foreach_copy_": (0, True),
    "aten::_foreach_zero_": (0, True),
}

# The element type in a kernel name (RE2, group 1): an element size in bytes (cat's byte copies),
# or a C++ type name (float, c10::Half, c10::BFloat16: sized by xsp_trace/formats/torch_dtypes.py).
KERNEL_ELEMENT_BYTES = r"OpaqueType<(\d+)u?>"
KERNEL_ELEMENT_TYPE = r"(?:CatArrayBatchedCopy\w*|Functor)<([A-Za-z_][\w:]*)[,>]"
