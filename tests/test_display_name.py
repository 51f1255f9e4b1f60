"""naming.display_name: a name as a finding or a summary shows it -- torch's per-instance details
(", seq = N, op_id = N, sizes = ...", from emit_nvtx and nsys's autograd-shapes-nvtx ranges) gone,
a kernel by its readable base name -- the expected names written out by hand."""

from __future__ import annotations

import pytest

from xsp_trace.naming import display_name


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("aten::mm, seq = 12, op_id = 345, sizes = [[8, 16], [16, 4]], input_op_ids = [(344, 0)]", "aten::mm"),
        ("aten::addmm, op_id = 7", "aten::addmm"),
        ("autograd::engine::evaluate_function: MulBackward0", "autograd::engine::evaluate_function: MulBackward0"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, T2, T3)",
            "vectorized_elementwise_kernel",
        ),
        (
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1::Params)",
            "cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1",
        ),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3"),
        ("cudaGraphLaunch", "cudaGraphLaunch"),
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("ProfilerStep#553", "ProfilerStep#553"),
    ],
)
def test_display_name(name, shown):
    assert display_name(name) == shown
