"""A script that fails after the model is built (the runner must stop and keep what it has)."""

import os
import sys

if os.environ.get("XSP_LEVEL") == os.environ.get("FAIL_AT_LEVEL", "ML"):
    print("model weights are corrupt", file=sys.stderr)
    sys.exit(3)

from tiny_model import build, make_input  # noqa: E402

from xsp_trace.capture import run  # noqa: E402

run(build(), make_input, name="tiny")
