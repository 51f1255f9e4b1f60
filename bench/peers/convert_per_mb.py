"""Seconds per MB of input for every Kineto and nsys trace in tests/data: a cost that grows with
something other than the input's size (an input-shape cliff) shows as one trace far above the rest.

Each trace is converted in a fresh child process (bench/peers/children.py), timed inside the child
around `convert_inputs` (imports and interpreter start-up left out); MB of input is the JSON
decompressed for Kineto, the file for nsys (an .nsys-rep's time includes `nsys export`). A convert
has a fixed cost (the database, its schema, the analyses installed), measured in the same run on a
one-event Kineto trace, once before each trace (the load of a shared machine drifts).
Verdicts (issue 48), the slowest within MAX_OVER_MEDIAN x the median: seconds per MB over the
traces of at least --min-mb (smaller ones are mostly the fixed cost), and seconds over what the
size predicts (the fixed cost + the median rate past it) over every trace.

    python -m bench.peers.convert_per_mb                         # every trace; ~3 min on 2 cores
    python -m bench.peers.convert_per_mb --only sampled_rank --before ../main   # before/after, same run

The peers benchmark (python -m bench.peers) runs it too (its generated block in BENCHMARKS.md carries the table).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from .children import ROOT, log, measure, python_script
from .targets import ISSUE_48

BENCH = ROOT / "bench"
MAX_OVER_MEDIAN = ISSUE_48["per_mb_max_over_median"]
MIN_MB = 5.0  # inputs past which the fixed cost is under half a convert
KINETO_SUFFIXES = (".json", ".json.gz")
NSYS_SUFFIXES = (".sqlite", ".nsys-rep")

# The child (python_script puts the checkout to import on its path): the trace, the output; prints the convert's seconds.
CONVERT = """
import sys, time
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_inputs
start = time.perf_counter()
convert_inputs([Path(sys.argv[1])], Path(sys.argv[2]), ConvertOptions(), overwrite=True)
print(time.perf_counter() - start)
"""

ONE_EVENT = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2}]}'


def traces(only: str = "") -> list[Path]:
    """Every Kineto and nsys trace under tests/data whose path contains `only`."""
    data = ROOT / "tests" / "data"
    found = [
        p
        for p in sorted(data.rglob("*"))
        if p.is_file() and p.name.endswith(KINETO_SUFFIXES + NSYS_SUFFIXES) and not any(part.startswith(".") for part in p.relative_to(data).parts)
    ]
    return [p for p in found if only in str(p.relative_to(ROOT))]


def input_bytes(path: Path) -> int:
    """The bytes a convert reads: decompressed JSON for Kineto, the file for nsys."""
    if path.name.endswith(".json.gz"):
        with gzip.open(path, "rb") as f:
            return sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))
    return path.stat().st_size


def convert_seconds(checkout: Path, trace: Path, folder: Path) -> dict:
    """One convert in a fresh child: seconds inside it, and the child's wall time and peak RSS."""
    out = folder / "out.duckdb"
    try:
        measured = measure(python_script(CONVERT, trace, out, checkout=checkout), stdout=subprocess.PIPE)
    except SystemExit as failed:  # a trace this machine cannot convert (an .nsys-rep of a newer nsys)
        return {"failed": str(failed).strip().splitlines()[-1].split(f"{trace.name}: ", 1)[-1][:160]}
    finally:
        out.unlink(missing_ok=True)
    return {"seconds": round(float(measured.pop("stdout").split()[-1]), 3), **measured}


def rows(only: str = "", before: Path | None = None) -> dict:
    """{'fixed': seconds of a one-event convert, 'rows': one per trace, 'before': checkout or None}.
    With `before`, each trace is converted by that checkout too, right after this one's."""
    result: dict = {"rows": [], "before": str(before) if before else None}
    with tempfile.TemporaryDirectory(prefix="xsp-per-mb-") as tmp:
        folder = Path(tmp)
        tiny = folder / "one_event.json"
        tiny.write_bytes(ONE_EVENT)
        fixed = []  # one before each trace: the load on a shared machine drifts over a run
        for trace in traces(only):
            name = str(trace.relative_to(ROOT / "tests" / "data"))
            log(f"per MB: {name}")
            fixed.append(convert_seconds(ROOT, tiny, folder)["seconds"])
            row = {"trace": name, "format": "kineto" if trace.name.endswith(KINETO_SUFFIXES) else "nsys"}
            row["file_bytes"], row["input_bytes"] = trace.stat().st_size, input_bytes(trace)
            row["xsp"] = convert_seconds(ROOT, trace, folder)
            if "failed" in row["xsp"]:
                result.setdefault("failed", []).append({"trace": name, "why": row["xsp"]["failed"]})
                continue
            if before:
                row["before"] = convert_seconds(before, trace, folder)
            result["rows"].append(row)
    result["fixed"] = statistics.median(fixed) if fixed else 0.0
    return result


def per_mb(row: dict, key: str = "xsp") -> float:
    return row[key]["seconds"] / (row["input_bytes"] / 1e6)


def rate(result: dict, min_mb: float = MIN_MB) -> float:
    """Seconds per MB past the fixed cost: the median over the traces of at least `min_mb` MB
    (smaller ones take about the fixed cost, which leaves their rate to the noise)."""
    big = [r for r in result["rows"] if r["input_bytes"] >= min_mb * 1e6]
    return statistics.median(max(r["xsp"]["seconds"] - result["fixed"], 0.0) / (r["input_bytes"] / 1e6) for r in big) if big else 0.0


def over_predicted(row: dict, fixed: float, per_mb_rate: float) -> float:
    """The convert's seconds over what its size predicts (the fixed cost + the rate x its MB)."""
    return row["xsp"]["seconds"] / (fixed + per_mb_rate * row["input_bytes"] / 1e6)


def verdicts(result: dict, min_mb: float = MIN_MB) -> list[str]:
    """The slowest against the median, twice: seconds per MB over the traces of at least `min_mb`
    MB (where the fixed cost does not dominate), and seconds over predicted over every trace."""
    out = []
    big = [r for r in result["rows"] if r["input_bytes"] >= min_mb * 1e6]
    if big:
        slowest, median = max(big, key=per_mb), statistics.median(per_mb(r) for r in big)
        ratio = per_mb(slowest) / median
        out.append(
            f"Seconds per MB, traces of {min_mb:g} MB and more: the slowest, {slowest['trace']} ({per_mb(slowest):.3f} s/MB), "
            f"is {ratio:.2f}x the median {median:.3f} s/MB (target <= {MAX_OVER_MEDIAN:g}x): {'PASS' if ratio <= MAX_OVER_MEDIAN else 'MISS'}."
        )
    fixed, per_mb_rate = result["fixed"], rate(result, min_mb)
    if result["rows"]:
        x = {r["trace"]: over_predicted(r, fixed, per_mb_rate) for r in result["rows"]}
        slowest_name, median = max(x, key=lambda t: x[t]), statistics.median(x.values())
        ratio = x[slowest_name] / median
        out.append(
            f"Seconds over predicted ({fixed:.2f} s + {per_mb_rate:.3f} s/MB), every trace: the slowest, {slowest_name} "
            f"({x[slowest_name]:.2f}), is {ratio:.2f}x the median {median:.2f} (target <= {MAX_OVER_MEDIAN:g}x): "
            f"{'PASS' if ratio <= MAX_OVER_MEDIAN else 'MISS'}."
        )
    return out


def markdown(result: dict, min_mb: float = MIN_MB) -> list[str]:
    before = result.get("before")
    fixed, per_mb_rate = result["fixed"], rate(result, min_mb)
    head = "| trace | format | file MB | input MB | convert s | s per MB | s over predicted |" + (" before s | before / now |" if before else "")
    out = [
        "### Convert seconds per MB of input, every trace in tests/data (bench/peers/convert_per_mb.py)",
        "",
        "Each a fresh process, timed around the convert inside it; input MB: decompressed JSON (Kineto), the file (nsys; "
        f"an .nsys-rep's export cached beside it). A one-event Kineto convert took {fixed:.2f} s (the fixed cost, the median of one run "
        f"before each trace); past it, {per_mb_rate:.3f} s per MB (the median over traces of {min_mb:g} MB and more). "
        "s over predicted: the convert's seconds / (the fixed cost + that rate x its MB)."
        + (f" 'before': the same convert by {before}, run right after." if before else ""),
        "",
        head,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if before else ""),
    ]
    for r in result["rows"]:
        line = (
            f"| {r['trace']} | {r['format']} | {r['file_bytes'] / 1e6:.2f} | {r['input_bytes'] / 1e6:.2f} | "
            f"{r['xsp']['seconds']:.2f} | {per_mb(r):.3f} | {over_predicted(r, fixed, per_mb_rate):.2f} |"
        )
        if before:
            b = r.get("before")
            line += f" {b['seconds']:.2f} | {b['seconds'] / r['xsp']['seconds']:.1f}x |" if b and "seconds" in b else " - | - |"
        out.append(line)
    out += [f"| {f['trace']} | not converted here: {f['why']} |" for f in result.get("failed", [])]
    return out + [""] + verdicts(result, min_mb) + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="only the traces whose path under tests/data contains this")
    parser.add_argument("--before", type=Path, help="another checkout to convert each trace with too (before/after in one run)")
    parser.add_argument("--min-mb", type=float, default=MIN_MB, help="the smallest input judged")
    parser.add_argument("--from-json", type=Path, help="only render a saved bench/results/per_mb-*.json")
    args = parser.parse_args()
    if args.from_json:
        result = json.loads(args.from_json.read_text())
    else:
        (BENCH / "data").mkdir(exist_ok=True)
        (BENCH / "results").mkdir(exist_ok=True)
        result = rows(args.only, args.before)
        (BENCH / "results" / f"per_mb-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(result, indent=1))
    print("\n".join(markdown(result, args.min_mb)))


if __name__ == "__main__":
    main()
