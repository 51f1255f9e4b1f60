"""A tiny CPU 'inference' with XSP's model/layer NVTX ranges, an op range inside each layer,
a mark, and a start/end range that ends on another thread. Profiled by tests under nsys."""

import threading
import time

import nvtx

ITERATIONS = 3
LAYERS = [("conv1", "Conv2d"), ("fc", "Linear")]
OP_MS, LAYER_EXTRA_MS, ASYNC_MS = 2, 1, 3


def sleep_ms(ms: float) -> None:
    time.sleep(ms / 1000)


for _ in range(ITERATIONS):
    with nvtx.annotate("xsp.model:toy", domain="xsp"):
        for index, (name, kind) in enumerate(LAYERS):
            with nvtx.annotate(f"xsp.layer:{index}:{name}:{kind}", domain="xsp"):
                with nvtx.annotate("aten::addmm"):
                    sleep_ms(OP_MS)
                sleep_ms(LAYER_EXTRA_MS)
nvtx.mark("done")
handle = nvtx.start_range("async work")
worker = threading.Thread(target=lambda: (sleep_ms(ASYNC_MS), nvtx.end_range(handle)))
worker.start()
worker.join()
