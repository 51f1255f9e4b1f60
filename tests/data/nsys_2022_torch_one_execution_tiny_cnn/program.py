"""One execution recorded by two profilers: run under nsys while torch.profiler records inside it.

The model and layer ranges go to NVTX (what nsys records) and to record_function annotations of
the same names (what the torch profiler records), so both traces hold the same spans.
Usage: python program.py KINETO_TRACE.json.gz  (record.sh runs it under nsys)
"""

import sys

import torch
from torch.profiler import ProfilerActivity, profile

from xsp_trace.capture import annotate
from xsp_trace.capture.examples.tiny_cnn import TinyNet, make_input

INFERENCES = 10


def main(trace_path: str) -> None:
    torch.manual_seed(0)
    model = TinyNet().eval()
    x = make_input(2)
    with torch.inference_mode():
        model(x)  # warm-up outside the profile
        with annotate(model, "tiny_cnn", nvtx=True, torch=True), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(INFERENCES):
                model(x)
    prof.export_chrome_trace(trace_path)


if __name__ == "__main__":
    main(sys.argv[1])
