"""Two torch.profiler (Kineto) CPU captures of the tiny CNN, of different lengths, from one process
(back to back, so both see the same machine): 30 and 50 inferences, no profiler steps.

    PYTHONPATH=. taskset -c 1 python3 tests/data/kineto_cpu_tiny_cnn_30_vs_50_calls/record.py tests/data/kineto_cpu_tiny_cnn_30_vs_50_calls
"""

import gzip
import shutil
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from xsp_trace.capture.examples.tiny_cnn import TinyNet, make_input

out = Path(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
model = TinyNet().eval()
x = make_input(1)
with torch.inference_mode():
    for _ in range(20):  # warm-up, not recorded
        model(x)
    for inferences in (30, 50):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(inferences):
                model(x)
        trace = out / f"tiny_cnn_{inferences}_inferences.json"
        prof.export_chrome_trace(str(trace))
        with open(trace, "rb") as src, gzip.open(f"{trace}.gz", "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        trace.unlink()
