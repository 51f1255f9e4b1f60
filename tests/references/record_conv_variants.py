"""Record a small PyTorch profiler trace (CPU, record_shapes) of every convolution variant the shape-based
perf model covers, forward and backward: 1d, 2d and 3d; groups (depthwise); stride, padding, dilation
(one value and per dimension); transposed with output_padding; with and without bias.

The real GPU traces in tests/data hold only plain 2d convolutions; this trace gives the other variants
a TraceLens reference (tests/references/tracelens_reference.py) to be compared with:

    python tests/references/record_conv_variants.py tests/data/kineto_cpu_conv_variants/conv_variants.json.gz
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile

import torch
from torch import nn

VARIANTS = (
    (nn.Conv1d(8, 16, 5, stride=2, padding=2), (2, 8, 64)),
    (nn.Conv1d(16, 16, 3, padding=2, dilation=2, groups=16, bias=False), (2, 16, 50)),
    (nn.Conv2d(3, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(1, 2)), (2, 3, 20, 24)),
    (nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False), (2, 8, 15, 15)),
    (nn.Conv3d(2, 4, 3, stride=2, padding=1), (1, 2, 9, 10, 11)),
    (nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1, output_padding=1), (2, 8, 17)),
    (nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 8, 7, 9)),
    (nn.ConvTranspose3d(4, 2, (2, 3, 3), stride=(1, 2, 2), dilation=(1, 2, 1), bias=False), (1, 4, 4, 5, 6)),
)


def main(out: str) -> None:
    torch.manual_seed(0)
    inputs = [torch.randn(*shape, requires_grad=True) for _, shape in VARIANTS]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for (layer, _), x in zip(VARIANTS, inputs, strict=True):
            layer(x).sum().backward()
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        partial = out + ".partial"
        with open(raw, "rb") as src, gzip.open(partial, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(partial, out)


if __name__ == "__main__":
    main(sys.argv[1])
