"""Writes norm_shapes.json.gz: a hand-made Kineto CPU trace (no GPU) with one call of each norm and
softmax op no recorded fixture holds, with the argument layout PyTorch 2.x's profiler writes
(record_shapes=True: "Input Dims", "Input type", "Input Strides", "Concrete Inputs"). TraceLens'
figures for it are in tracelens_vector_models.csv (tests/references/tracelens_vector_reference.py).

    python3 tests/data/kineto_handmade_norm_shapes/make_trace.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

BF16, F32, SL = "c10::BFloat16", "float", "ScalarList"


def _strides(shape: list[int]) -> list[int]:
    out, step = [], 1
    for size in reversed(shape):
        out.insert(0, step)
        step *= size
    return out


# (name, [(shape, type, concrete)])
CALLS = [
    ("aten::native_layer_norm", [([8, 128, 768], BF16, ""), ([], SL, "[768]"), ([768], BF16, ""), ([768], BF16, ""), ([], "Scalar", "1e-05")]),
    (
        "aten::native_layer_norm_backward",
        [
            ([8, 128, 768], BF16, ""),
            ([8, 128, 768], BF16, ""),
            ([], SL, "[768]"),
            ([8, 128, 1], F32, ""),
            ([8, 128, 1], F32, ""),
            ([768], BF16, ""),
            ([768], BF16, ""),
            ([], SL, "[True, True, True]"),
        ],
    ),  # fmt: skip
    (
        "aten::native_layer_norm_backward",
        [
            ([8, 128, 768], F32, ""),
            ([8, 128, 768], F32, ""),
            ([], SL, "[768]"),
            ([8, 128, 1], F32, ""),
            ([8, 128, 1], F32, ""),
            ([768], F32, ""),
            ([], "", ""),
            ([], SL, "[True, True, False]"),
        ],
    ),  # fmt: skip
    (
        "aten::native_group_norm",
        [
            ([4, 64, 16, 16], F32, ""),
            ([64], F32, ""),
            ([64], F32, ""),
            ([], "Scalar", "4"),
            ([], "Scalar", "64"),
            ([], "Scalar", "256"),
            ([], "Scalar", "8"),
            ([], "Scalar", "1e-05"),
        ],
    ),  # fmt: skip
    (
        "aten::native_group_norm_backward",
        [
            ([4, 64, 16, 16], F32, ""),
            ([4, 64, 16, 16], F32, ""),
            ([4, 8], F32, ""),
            ([4, 8], F32, ""),
            ([64], F32, ""),
            ([], "Scalar", "4"),
            ([], "Scalar", "64"),
            ([], "Scalar", "256"),
            ([], "Scalar", "8"),
            ([], SL, "[True, True, True]"),
        ],
    ),  # fmt: skip
    ("aten::_fused_rms_norm", [([8, 128, 768], BF16, ""), ([], SL, "[768]"), ([768], BF16, ""), ([], "Scalar", "1e-06")]),
    (
        "aten::_fused_rms_norm_backward",
        [
            ([8, 128, 768], BF16, ""),
            ([8, 128, 768], BF16, ""),
            ([], SL, "[768]"),
            ([8, 128, 1], F32, ""),
            ([768], BF16, ""),
            ([], SL, "[True, True]"),
        ],
    ),  # fmt: skip
    ("aten::_softmax", [([8, 12, 128, 128], BF16, ""), ([], "Scalar", "-1"), ([], "Scalar", "False")]),
    ("aten::_softmax_backward_data", [([8, 12, 128, 128], BF16, ""), ([8, 12, 128, 128], BF16, ""), ([], "Scalar", "-1"), ([], "Scalar", "15")]),
    ("aten::cumsum", [([8, 1024], F32, ""), ([], "Scalar", "1"), ([], "", "")]),
    ("aten::amax", [([8, 1024], BF16, ""), ([], SL, "[1]"), ([], "Scalar", "False")]),
    ("aten::gelu", [([8, 128, 3072], BF16, ""), ([], "", "'none'")]),
]


def main() -> None:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000.0, "dur": 1000.0, "args": {"External id": 1}}
    ]
    for i, (name, operands) in enumerate(CALLS):
        args = {
            "External id": 10 + i,
            "Record function id": 0,
            "Input Dims": [shape for shape, _, _ in operands],
            "Input type": [dtype for _, dtype, _ in operands],
            "Input Strides": [_strides(shape) if shape else [] for shape, _, _ in operands],
            "Concrete Inputs": [concrete for _, _, concrete in operands],
            "Ev Idx": i,
        }
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 1010.0 + 50 * i, "dur": 40.0, "args": args})
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "traceEvents": events,
        "traceName": "norm_shapes",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }
    with open(Path(__file__).with_name("norm_shapes.json.gz"), "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(trace).encode())  # mtime 0: the same bytes on every run


if __name__ == "__main__":
    main()
