"""The one builder of hand-made databases (the Perfetto diff-test style: a hand-made database, the
query, the expected table worked out by hand in the test): a `Run` collects spans and rows of any
other table of the schema, `write` stores runs and correlates them like a converted trace (nesting,
launches, steps and attribution filled by xsp_trace.convert.correlate, never by hand).

Used for plain traces (summaries, communication, idle time, findings, critical path), for the
leveled capture of support/leveled.py and for the Perfetto harness's database.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from xsp_trace.analyze.install import install_analyses
from xsp_trace.convert.correlate import correlate_run
from xsp_trace.store.database import atomic_database, insert_relation, insert_run

PID, TID = 100, 100

_SPAN_COLUMNS = (
    "run_id",
    "span_id",
    "kind",
    "name",
    "category",
    "start_ns",
    "end_ns",
    "pid",
    "tid",
    "device_id",
    "stream_id",
    "correlation_id",
    "layer_index",
    "iteration",
    "range_style",
)


class Run:
    """Spans and side rows of one run; ids are handed out in insertion order (1, 2, ...)."""

    def __init__(self, run_id: int, **run_fields):
        self.run_id = run_id
        self.fields = run_fields
        self.spans: list[dict] = []
        self.side: dict[str, list[dict]] = defaultdict(list)  # table -> rows, inserted after the spans
        self._correlation = 0

    def row(self, table: str, **values) -> None:
        """A row of any other table of the schema (run_id filled in)."""
        self.side[table].append({"run_id": self.run_id, **values})

    def span(self, kind: str, name: str, start: int, end: int, **extra) -> int:
        span_id = len(self.spans) + 1
        row = dict.fromkeys(_SPAN_COLUMNS)
        row.update(
            run_id=self.run_id,
            span_id=span_id,
            kind=kind,
            name=name,
            start_ns=start,
            end_ns=end,
            pid=PID,
            tid=None if kind in ("kernel", "memcpy", "memset", "sync") else TID,
        )
        row.update(extra)
        self.spans.append(row)
        return span_id

    def args(self, span_id: int, values: dict) -> None:
        for key, value in values.items():
            self.side["span_args"].append({"run_id": self.run_id, "span_id": span_id, "key": key, "value": str(value)})

    def gpu(
        self,
        kind: str,
        name: str,
        cpu: tuple[int, int] | None,
        gpu: tuple[int, int],
        api: str = "cudaLaunchKernel",
        stream: int = 7,
        device: int = 0,
        tid: int = TID,
        **kernel,
    ) -> int:
        """A GPU span on `device`/`stream`, launched by an API call over `cpu` (None: no launch)."""
        correlation = None
        if cpu is not None:
            self._correlation += 1
            correlation = self._correlation
            self.span("api", api, *cpu, correlation_id=correlation, category="cuda_runtime", tid=tid)
        span_id = self.span(kind, name, *gpu, device_id=device, stream_id=stream, correlation_id=correlation)
        if kind == "kernel":
            self.side["kernels"].append({"run_id": self.run_id, "span_id": span_id, **kernel})
        return span_id

    def memop(
        self,
        kind: str,
        cpu,
        gpu,
        copy_kind: str | None,
        nbytes: int,
        src: str | None = None,
        dst: str | None = None,
        api: str = "cudaMemcpyAsync",
        **extra,
    ) -> int:
        name = "[CUDA memset]" if kind == "memset" else f"Memcpy {copy_kind}"
        span_id = self.gpu(kind, name, cpu, gpu, api=api, **extra)
        self.side["memops"].append(
            {
                "run_id": self.run_id,
                "span_id": span_id,
                "kind": kind,
                "copy_kind": copy_kind,
                "bytes": nbytes,
                "duration_ns": gpu[1] - gpu[0],
                "src_kind": src,
                "dst_kind": dst,
            }
        )
        return span_id

    def device(self, device_id: int = 0, name: str = "NVIDIA A100-SXM4-40GB") -> None:
        self.row("devices", device_id=device_id, name=name)


def _table(rows: list[dict]) -> pa.Table:
    """The rows as one table, every column any row has (NULL where a row has none)."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return pa.Table.from_pylist([{column: row.get(column) for column in columns} for row in rows])


def write(path: Path, runs: list[Run]) -> Path:
    """Store `runs` in a new database at `path` and correlate each; the path."""
    with atomic_database(path, overwrite=True) as con:
        for run in runs:
            fields = {"source_kind": "nsys", "tool": "handmade", **run.fields}
            insert_run(con, run.run_id, **fields)
            insert_relation(con, "spans", pa.Table.from_pylist(run.spans))
            for table, rows in run.side.items():
                if rows:
                    insert_relation(con, table, _table(rows))
            correlate_run(con, run.run_id)
        install_analyses(con)  # as convert does
    return path
