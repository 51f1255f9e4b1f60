"""Where one convert spends its wall and CPU seconds: every statement of its SQL scripts and each
correlation phase, in the convert itself.

Runs the ordinary convert of one input with every SQL script (queries/ingest/*, queries/correlate/*)
run one statement at a time (DuckDB's own statement split) and the named phases timed around, and
prints per statement (summed over pieces and ranges) and per phase the wall seconds and the
process's CPU seconds (user + system, all threads: more than the wall where DuckDB or a reader
thread works beside). Phases are in [brackets] and include the statements they run. Input: a
Kineto size (`100M`, `1G`), nsys copies (`x30`, `x290`: bench/peers/scaled_inputs.py builds both), or a
path. The checkout measured is the one `--checkout` names (default this one; its xsp_trace is imported in place of this one's):

    python -m bench.convert_statements x290 [--checkout /work/main] [--rounds 2] [--top 20]
"""

from __future__ import annotations

import argparse
import importlib
import re
import resource
import tempfile
import time
from pathlib import Path

from bench.peers.children import import_checkout
from bench.peers.scaled_inputs import parse_size, scaled_kineto, scaled_nsys

BENCH = Path(__file__).resolve().parent

# Modules that run SQL scripts (each imported run_script by name), and the phases timed around.
SCRIPT_RUNNERS = ("xsp_trace.convert.nsys.converter", "xsp_trace.convert.kineto.converter", "xsp_trace.convert.correlate")
PHASES = (
    ("xsp_trace.convert.nsys.converter", "_stage_all"),
    ("xsp_trace.convert.kineto.duckdb_reader", "read_events"),  # every piece read and mapped
    ("xsp_trace.convert.correlate", "nest_cpu_spans"),
    ("xsp_trace.convert.correlate", "build_ancestors"),
    ("xsp_trace.convert.correlate", "inherit_down"),
    ("xsp_trace.convert.correlate", "insert_attribution"),
)


def statement_label(statement: str) -> str:
    """A statement's first 60 characters, comments and line breaks left out, and what its outer
    FROM reads (the statements of a script often begin alike: `INSERT INTO spans (...`)."""
    lines = [line.strip() for line in statement.splitlines() if line.strip() and not line.strip().startswith("--")]
    text = " ".join(lines)
    source = re.search(r"\bFROM\s+([\w.]+)", text[60:])
    return text[:60] + (f" ... FROM {source.group(1)}" if source else "")


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Timings:
    """Calls, wall and CPU seconds per label; `rows` is emptied for each round."""

    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}  # label -> [calls, wall, cpu]

    def add(self, label: str, wall: float, cpu: float) -> None:
        row = self.rows.setdefault(label, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += wall
        row[2] += cpu

    def timed(self, label: str, call, *args, **kwargs):
        wall, cpu = time.perf_counter(), process_cpu()
        try:
            return call(*args, **kwargs)
        finally:
            self.add(label, time.perf_counter() - wall, process_cpu() - cpu)


def time_statements(timings: Timings, scripts: set[str] | None = None) -> None:
    """Replace run_script where the converters and correlate.py use it: a script in `scripts`
    (every script when None) runs one statement at a time, each timed; any other runs as before."""
    from xsp_trace.store.database import run_script as run_whole

    def run_script(con, sql, run_id):
        if scripts is not None and sql not in scripts:
            return run_whole(con, sql, run_id)
        for statement in con.extract_statements(sql):
            timings.timed(statement_label(statement.query), run_whole, con, statement.query, run_id)
        return None

    for name in SCRIPT_RUNNERS:
        module = importlib.import_module(name)
        if hasattr(module, "run_script"):
            module.run_script = run_script


def time_phases(timings: Timings) -> None:
    """Wrap each of PHASES (those the checkout has) so that its calls are timed as `[name]`."""
    for name, attribute in PHASES:
        module = importlib.import_module(name)
        original = getattr(module, attribute, None)
        if original is not None:
            setattr(module, attribute, lambda *a, _f=original, _l=f"[{attribute}]", **k: timings.timed(_l, _f, *a, **k))


def input_path(spec: str) -> Path:
    if spec.startswith("x") and spec[1:].isdigit():
        return scaled_nsys(int(spec[1:]))
    if Path(spec).exists():
        return Path(spec)
    return scaled_kineto(parse_size(spec))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="Kineto size (1G), nsys copies (x290) or a path")
    parser.add_argument("--checkout", type=Path, default=BENCH.parent)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--top", type=int, default=20, help="rows shown, slowest first")
    args = parser.parse_args()
    import_checkout(args.checkout)
    from xsp_trace.convert import ConvertOptions, convert_inputs

    path = input_path(args.input)
    timings = Timings()
    time_statements(timings)
    time_phases(timings)
    for round_number in range(args.rounds):
        timings.rows = {}
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu = time.perf_counter(), process_cpu()
            convert_inputs([path], Path(folder) / "out.duckdb", ConvertOptions(), overwrite=True)
            wall, cpu = time.perf_counter() - wall, process_cpu() - cpu
        print(f"round {round_number + 1}: {path.name} via {args.checkout}: convert {wall:.2f} s wall, {cpu:.2f} s CPU")
        print("| statement or [phase] | calls | wall s | CPU s |\n| --- | ---: | ---: | ---: |")
        for label, (calls, seconds, cpu_seconds) in sorted(timings.rows.items(), key=lambda kv: -kv[1][1])[: args.top]:
            print(f"| `{label}` | {calls} | {seconds:.2f} | {cpu_seconds:.2f} |")


if __name__ == "__main__":
    main()
