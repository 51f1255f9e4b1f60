"""PyTorch dtype names as the profiler writes them (Kineto "Input type", NCCL "dtype" args): bytes per
element and the precision class that picks a device's peak FLOP/s.

Keys are lower case; queries match `lower(name)`. Sizes follow the dtypes' definitions (and agree
with TraceLens' `name2bpe`). "Scalar" (a Python number passed to an op) counts as a 4-byte operand,
as TraceLens counts it. Precision classes: fp64, fp32, fp16, bf16, fp8, int8 (the columns of
xsp_trace/formats/device_peaks.py); a float32 matmul is charged to fp32, not TF32, because PyTorch
runs float32 matmuls without TF32 unless the model allows it (torch.backends.cuda.matmul.allow_tf32,
off by default since 1.12) and the trace does not say.
"""

from __future__ import annotations

DTYPE_BYTES: dict[str, int] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "c10::half": 2,
    "bfloat16": 2,
    "c10::bfloat16": 2,
    "int": 4,
    "int32": 4,
    "long": 8,
    "long int": 8,
    "int64": 8,
    "short": 2,
    "int16": 2,
    "char": 1,
    "int8": 1,
    "signed char": 1,
    "byte": 1,
    "unsigned char": 1,
    "uint8": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "c10::float8_e4m3fn": 1,
    "c10::float8_e5m2": 1,
    "c10::float8_e4m3fnuz": 1,
    "c10::float8_e5m2fnuz": 1,
    "scalar": 4,
}

DTYPE_PRECISION: dict[str, str] = {
    "float": "fp32",
    "float32": "fp32",
    "double": "fp64",
    "float64": "fp64",
    "half": "fp16",
    "float16": "fp16",
    "c10::half": "fp16",
    "bfloat16": "bf16",
    "c10::bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e5m2": "fp8",
    "c10::float8_e4m3fnuz": "fp8",
    "c10::float8_e5m2fnuz": "fp8",
    "int8": "int8",
    "signed char": "int8",
    "char": "int8",
    "uint8": "int8",
    "unsigned char": "int8",
}
