"""A script whose NVTX ranges reach no tool: it points NVTX at an injection library that does
not exist before the first range, as a broken environment (or an nvtx release that this nsys
cannot hear) would. Under nsys the trace then holds no model range: an empty run."""

import os

os.environ["NVTX_INJECTION64_PATH"] = "/nonexistent/libnvtx-injection.so"

from tiny_model import build, make_input  # noqa: E402

from xsp_trace.capture import run  # noqa: E402

run(build(), make_input, name="tiny")
