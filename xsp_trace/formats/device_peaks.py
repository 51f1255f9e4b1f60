"""Peak FP32 FLOP/s and DRAM bandwidth of GPUs by name, for rooflines and the memory-bound flag.

The one place these vendor figures live. A device name from a trace (nsys TARGET_INFO_GPU,
Kineto deviceProperties) is matched against the patterns in order, first match wins; more
specific patterns come first. Figures are the vendors' datasheet peaks: FP32 on the CUDA/vector
cores (not tensor cores, not sparsity) and the DRAM/HBM bandwidth. Users override them with
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


DEVICE_PEAKS: tuple[DevicePeak, ...] = (
    # NVIDIA H200 datasheet: FP32 67 TFLOPS, HBM3e 4.8 TB/s (SXM).
    DevicePeak(r"H200", 67 * T, 4.8 * T, "NVIDIA H200 datasheet (SXM)"),
    # NVIDIA H100 datasheet: PCIe FP32 51 TFLOPS, 2.0 TB/s; NVL 60 TFLOPS, 3.9 TB/s; SXM 67 TFLOPS, 3.35 TB/s.
    DevicePeak(r"H100.*PCIe", 51 * T, 2.0 * T, "NVIDIA H100 datasheet (PCIe)"),
    DevicePeak(r"H100.*NVL", 60 * T, 3.9 * T, "NVIDIA H100 datasheet (NVL)"),
    DevicePeak(r"H100", 67 * T, 3.35 * T, "NVIDIA H100 datasheet (SXM5)"),
    # NVIDIA A100 datasheet: FP32 19.5 TFLOPS; 40GB 1.555 TB/s; 80GB PCIe 1.935 TB/s; 80GB SXM 2.039 TB/s.
    DevicePeak(r"A100.*80GB.*PCIe|A100.*PCIe.*80GB", 19.5 * T, 1.935 * T, "NVIDIA A100 datasheet (80GB PCIe)"),
    DevicePeak(r"A100.*80GB", 19.5 * T, 2.039 * T, "NVIDIA A100 datasheet (80GB SXM)"),
    DevicePeak(r"A100", 19.5 * T, 1.555 * T, "NVIDIA A100 datasheet (40GB)"),
    # NVIDIA Blackwell datasheet (HGX B200, per GPU): FP32 80 TFLOPS, HBM3e 8 TB/s.
    DevicePeak(r"B200", 80 * T, 8.0 * T, "NVIDIA HGX B200 datasheet, per GPU"),
    # NVIDIA V100 datasheet: SXM2 FP32 15.7 TFLOPS, PCIe 14 TFLOPS; 900 GB/s.
    DevicePeak(r"V100.*PCIE", 14 * T, 0.9 * T, "NVIDIA V100 datasheet (PCIe)"),
    DevicePeak(r"V100", 15.7 * T, 0.9 * T, "NVIDIA V100 datasheet (SXM2)"),
    # NVIDIA A10 / L4 / T4 datasheets.
    DevicePeak(r"\bA10\b", 31.2 * T, 0.6 * T, "NVIDIA A10 datasheet"),
    DevicePeak(r"\bL4\b", 30.3 * T, 0.3 * T, "NVIDIA L4 datasheet"),
    DevicePeak(r"\bT4\b", 8.1 * T, 0.32 * T, "NVIDIA T4 datasheet"),
    # NVIDIA GeForce specifications: RTX 4090 82.6 TFLOPS, 1008 GB/s; RTX 3090 35.6, 936 GB/s; RTX 3080 29.8, 760 GB/s.
    DevicePeak(r"RTX 4090", 82.6 * T, 1.008 * T, "NVIDIA GeForce RTX 4090 specifications"),
    DevicePeak(r"RTX 3090", 35.6 * T, 0.936 * T, "NVIDIA GeForce RTX 3090 specifications"),
    DevicePeak(r"RTX 3080", 29.8 * T, 0.76 * T, "NVIDIA GeForce RTX 3080 specifications (10GB)"),
    # AMD Instinct MI250X / MI250 datasheets: FP32 vector 47.9 / 45.3 TFLOPS, HBM2e 3.2768 TB/s.
    DevicePeak(r"MI250X", 47.9 * T, 3.2768 * T, "AMD Instinct MI250X datasheet"),
    DevicePeak(r"MI250", 45.3 * T, 3.2768 * T, "AMD Instinct MI250 datasheet"),
    # AMD Instinct MI300X datasheet: FP32 vector 163.4 TFLOPS, HBM3 5.3 TB/s.
    DevicePeak(r"MI300X", 163.4 * T, 5.3 * T, "AMD Instinct MI300X datasheet"),
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
