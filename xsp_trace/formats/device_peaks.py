"""Peak FLOP/s and DRAM bandwidth of GPUs by name, for rooflines, MFU and the memory-bound flag.

The one place these vendor figures live. A device name from a trace (nsys TARGET_INFO_GPU,
Kineto deviceProperties) is matched against the patterns in order, first match wins; more
specific patterns come first. Figures are the vendors' datasheet peaks: FP32 on the CUDA/vector
cores and the DRAM/HBM bandwidth (`peak_flops`, `peak_dram_bytes_per_s`), and the dense
matrix-unit (tensor core / matrix core) peak per precision (`matrix_flops`). Datasheets print
NVIDIA's tensor figures "with sparsity"; the dense figure, half of it, is what a dense GEMM can
reach and what is stored here. Users override the FP32/bandwidth pair with
`xsp-trace analyze --peak-flops/--peak-dram-bw` (DuckDB variables xsp_peak_flops,
xsp_peak_dram_bytes_per_s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

T = 1e12


@dataclass(frozen=True)
class DevicePeak:
    pattern: str  # regular expression, matched case-insensitively anywhere in the device name
    peak_flops: float  # FP32 FLOP/s
    peak_dram_bytes_per_s: float
    source: str
    # Dense matrix-unit peak FLOP/s per precision class (xsp_trace/formats/torch_dtypes.py); a
    # precision without an entry runs on the vector units (fp32: peak_flops).
    matrix_flops: tuple[tuple[str, float], ...] = ()

    def matrix_peak(self, precision: str) -> float | None:
        """Peak FLOP/s of a dense matrix op (GEMM, attention) in that precision."""
        peak = dict(self.matrix_flops).get(precision)
        if peak is None and precision == "fp32":
            return self.peak_flops
        return peak


_A100_MATRIX = (("tf32", 156 * T), ("fp16", 312 * T), ("bf16", 312 * T), ("int8", 624 * T))

DEVICE_PEAKS: tuple[DevicePeak, ...] = (
    # NVIDIA H200 datasheet: FP32 67 TFLOPS, HBM3e 4.8 TB/s (SXM).
    DevicePeak(
        r"H200",
        67 * T,
        4.8 * T,
        "NVIDIA H200 datasheet (SXM)",
        (("tf32", 494.7 * T), ("fp16", 989.4 * T), ("bf16", 989.4 * T), ("fp8", 1978.9 * T), ("int8", 1978.9 * T)),
    ),
    # NVIDIA H100 datasheet: PCIe FP32 51 TFLOPS, 2.0 TB/s; NVL 60 TFLOPS, 3.9 TB/s; SXM 67 TFLOPS, 3.35 TB/s.
    # Tensor cores with sparsity: SXM TF32 989 / FP16, BF16 1,979 / FP8 3,958; PCIe 756 / 1,513 / 3,026;
    # NVL 835 / 1,671 / 3,341 TFLOPS -- halved here (dense).
    DevicePeak(
        r"H100.*PCIe",
        51 * T,
        2.0 * T,
        "NVIDIA H100 datasheet (PCIe)",
        (("tf32", 378 * T), ("fp16", 756.5 * T), ("bf16", 756.5 * T), ("fp8", 1513 * T), ("int8", 1513 * T)),
    ),
    DevicePeak(
        r"H100.*NVL",
        60 * T,
        3.9 * T,
        "NVIDIA H100 datasheet (NVL)",
        (("tf32", 417.5 * T), ("fp16", 835.5 * T), ("bf16", 835.5 * T), ("fp8", 1670.5 * T), ("int8", 1670.5 * T)),
    ),
    DevicePeak(
        r"H100",
        67 * T,
        3.35 * T,
        "NVIDIA H100 datasheet (SXM5)",
        (("tf32", 494.7 * T), ("fp16", 989.4 * T), ("bf16", 989.4 * T), ("fp8", 1978.9 * T), ("int8", 1978.9 * T)),
    ),
    # NVIDIA A100 datasheet: FP32 19.5 TFLOPS; 40GB 1.555 TB/s; 80GB PCIe 1.935 TB/s; 80GB SXM 2.039 TB/s.
    # Tensor cores, dense: TF32 156, FP16/BF16 312, INT8 624 TOPS (twice that with sparsity); no FP8.
    DevicePeak(r"A100.*80GB.*PCIe|A100.*PCIe.*80GB", 19.5 * T, 1.935 * T, "NVIDIA A100 datasheet (80GB PCIe)", _A100_MATRIX),
    DevicePeak(r"A100.*80GB", 19.5 * T, 2.039 * T, "NVIDIA A100 datasheet (80GB SXM)", _A100_MATRIX),
    DevicePeak(r"A100", 19.5 * T, 1.555 * T, "NVIDIA A100 datasheet (40GB)", _A100_MATRIX),
    # NVIDIA GB200 NVL72 / HGX B200 datasheet, individual GPU of HGX B200: FP32 75 TFLOPS, 180 GB HBM3e at
    # 7.7 TB/s; tensor cores with sparsity TF32 2.2, FP16/BF16 4.5, FP8 9 PFLOPS -- halved here (dense).
    DevicePeak(
        r"B200",
        75 * T,
        7.7 * T,
        "NVIDIA HGX B200 datasheet, individual GPU (current revision)",
        (("tf32", 1100 * T), ("fp16", 2250 * T), ("bf16", 2250 * T), ("fp8", 4500 * T), ("int8", 4500 * T)),
    ),
    # NVIDIA V100 datasheet: SXM2 FP32 15.7 TFLOPS, PCIe 14 TFLOPS; 900 GB/s.
    # Tensor cores (FP16 only): SXM2 125, PCIe 112 TFLOPS.
    DevicePeak(r"V100.*PCIE", 14 * T, 0.9 * T, "NVIDIA V100 datasheet (PCIe)", (("fp16", 112 * T),)),
    DevicePeak(r"V100", 15.7 * T, 0.9 * T, "NVIDIA V100 datasheet (SXM2)", (("fp16", 125 * T),)),
    # NVIDIA A10 / L4 / T4 datasheets.
    # Tensor cores, dense (datasheets print twice these with sparsity): A10 TF32 62.5, FP16/BF16 125,
    # INT8 250; L4 TF32 60, FP16/BF16 121, FP8 and INT8 242.5; T4 (no sparsity figures) FP16 65, INT8 130.
    DevicePeak(r"\bA10\b", 31.2 * T, 0.6 * T, "NVIDIA A10 datasheet", (("tf32", 62.5 * T), ("fp16", 125 * T), ("bf16", 125 * T), ("int8", 250 * T))),
    DevicePeak(
        r"\bL4\b",
        30.3 * T,
        0.3 * T,
        "NVIDIA L4 datasheet",
        (("tf32", 60 * T), ("fp16", 121 * T), ("bf16", 121 * T), ("fp8", 242.5 * T), ("int8", 242.5 * T)),
    ),
    DevicePeak(r"\bT4\b", 8.1 * T, 0.32 * T, "NVIDIA T4 datasheet", (("fp16", 65 * T), ("int8", 130 * T))),
    # NVIDIA GeForce specifications: RTX 4090 82.6 TFLOPS, 1008 GB/s; RTX 3090 35.6, 936 GB/s; RTX 3080 29.8, 760 GB/s.
    DevicePeak(r"RTX 4090", 82.6 * T, 1.008 * T, "NVIDIA GeForce RTX 4090 specifications"),
    DevicePeak(r"RTX 3090", 35.6 * T, 0.936 * T, "NVIDIA GeForce RTX 3090 specifications"),
    DevicePeak(r"RTX 3080", 29.8 * T, 0.76 * T, "NVIDIA GeForce RTX 3080 specifications (10GB)"),
    # AMD Instinct MI250X / MI250 datasheets: FP32 vector 47.9 / 45.3 TFLOPS, HBM2e 3.2768 TB/s; matrix
    # cores FP32 95.7 / 90.5, FP16 and BF16 383 / 362.1 TFLOPS, INT8 383 / 362.1 TOPS.
    DevicePeak(
        r"MI250X",
        47.9 * T,
        3.2768 * T,
        "AMD Instinct MI250X datasheet",
        (("fp32", 95.7 * T), ("fp16", 383 * T), ("bf16", 383 * T), ("int8", 383 * T)),
    ),
    DevicePeak(
        r"MI250",
        45.3 * T,
        3.2768 * T,
        "AMD Instinct MI250 datasheet",
        (("fp32", 90.5 * T), ("fp16", 362.1 * T), ("bf16", 362.1 * T), ("int8", 362.1 * T)),
    ),
    # AMD Instinct MI300X datasheet: FP32 vector 163.4 TFLOPS, HBM3 5.3 TB/s; matrix cores, dense:
    # FP32 163.4, TF32 653.7, FP16 and BF16 1,307.4, FP8 2,614.9 TFLOPS, INT8 2,614.9 TOPS.
    DevicePeak(
        r"MI300X",
        163.4 * T,
        5.3 * T,
        "AMD Instinct MI300X datasheet",
        (("fp32", 163.4 * T), ("tf32", 653.7 * T), ("fp16", 1307.4 * T), ("bf16", 1307.4 * T), ("fp8", 2614.9 * T), ("int8", 2614.9 * T)),
    ),
)

_COMPILED = tuple((re.compile(p.pattern, re.IGNORECASE), p) for p in DEVICE_PEAKS)


def lookup_peak(device_name: str | None) -> DevicePeak | None:
    """The table entry for a device name, or None when the name is unknown or missing."""
    if not device_name:
        return None
    for regex, peak in _COMPILED:
        if regex.search(device_name):
            return peak
    return None
