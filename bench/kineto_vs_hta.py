"""Kineto convert vs HTA, back to back on a shared machine: the convert + kernel breakdown of this
checkout (and of a second checkout, "before"), HTA's load + kernel breakdown, and the floor (the
events alone read by DuckDB's read_json with explicit columns), each a fresh child process
(`measure` in bench/peers/children.py: wall, peak RSS), in rounds that alternate the order, so a change of load
hits every side alike. Prints one Markdown row per run and the ratios per round.

    python -m bench.kineto_vs_hta 1G --before /work/main --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

from bench.peers.__main__ import HTA, XSP_KINETO
from bench.peers.children import PRELUDE, measure, python_script
from bench.peers.scaled_inputs import DATA, parse_size, scaled_kineto, size_label

# The floor: the trace's events cut into pieces as the convert cuts them (extract_events), then
# every piece read by read_json with the convert's column types (args as JSON) into a temp table
# and dropped: no mapping, no linking, no correlation. The two parts' times go to stdout.
FLOOR = (
    PRELUDE
    + """
import json, tempfile, time
from pathlib import Path
from xsp_trace.store.connection import duckdb_connect, duckdb_threads
from xsp_trace.convert.input_limits import MAX_VALUE_BYTES, InputLimits
from xsp_trace.convert.kineto.duckdb_reader import PIECE_BYTES, TAIL_BYTES, extract_events
from xsp_trace.convert.kineto.events import READ_JSON_COLUMNS
from xsp_trace.convert.kineto.pieces import PieceWriter
con = duckdb_connect()
con.execute("SET memory_limit = '500MB'")
threads = duckdb_threads(con)
files = []
with tempfile.TemporaryDirectory() as folder:
    start = time.perf_counter()
    writer = PieceWriter(Path(folder), max(1, PIECE_BYTES // threads), 2 * TAIL_BYTES, files.append)
    assert extract_events(Path(sys.argv[1]), writer, InputLimits()) is not None
    cut = time.perf_counter()
    rows = 0
    for i in range(0, len(files), threads):
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE _floor AS SELECT * FROM read_json(?, format = 'array', "
            f"maximum_object_size = {MAX_VALUE_BYTES}, columns = {READ_JSON_COLUMNS})",
            [[str(f) for f in files[i : i + threads]]],
        )
        rows += con.execute("SELECT count(*) FROM _floor").fetchone()[0]
        con.execute("DROP TABLE _floor")
    done = time.perf_counter()
print(json.dumps({"cut_seconds": round(cut - start, 2), "read_seconds": round(done - cut, 2), "rows": rows}))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", default="1G")
    parser.add_argument("--before", type=Path, help="a second checkout whose convert is measured too")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-floor", action="store_true")
    args = parser.parse_args()
    path = scaled_kineto(parse_size(args.size))
    out = DATA / f"_vs_hta_{size_label(parse_size(args.size))}.duckdb"
    sides = {"xsp-trace (this checkout)": python_script(XSP_KINETO, path, out)}
    if args.before:
        sides[f"xsp-trace ({args.before})"] = python_script(XSP_KINETO, path, out, checkout=args.before)
    sides["HTA load + kernel breakdown"] = python_script(HTA, path)
    if not args.no_floor:
        sides["floor: cut + read_json of the events"] = python_script(FLOOR, path)
    print(f"{path.name}, {os.cpu_count()} cores; load average before {os.getloadavg()[0]:.2f}", flush=True)
    print("| round | side | wall s | peak MiB | load1 after | notes |\n| --- | --- | ---: | ---: | ---: | --- |", flush=True)
    results: list[dict] = []
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            piped = side.startswith("floor")
            m = measure(sides[side], stdout=subprocess.PIPE if piped else subprocess.DEVNULL)
            note = json.loads(m["stdout"]) if piped else ""
            out.unlink(missing_ok=True)
            results.append({"round": r + 1, "side": side, **m, "load1": os.getloadavg()[0]})
            print(f"| {r + 1} | {side} | {m['seconds']:.1f} | {m['peak_mib']:.0f} | {os.getloadavg()[0]:.2f} | {note} |", flush=True)
    ours = "xsp-trace (this checkout)"
    for r in range(1, args.rounds + 1):
        got = {x["side"]: x for x in results if x["round"] == r}
        hta = got["HTA load + kernel breakdown"]
        line = f"round {r}: HTA / xsp-trace time {hta['seconds'] / got[ours]['seconds']:.2f}x, xsp-trace / HTA peak {got[ours]['peak_mib'] / hta['peak_mib']:.3f}"
        for side, m in got.items():
            if side not in (ours, "HTA load + kernel breakdown"):
                line += f"; HTA / {side} {hta['seconds'] / m['seconds']:.2f}x"
        print(line, flush=True)
    (DATA / "kineto_vs_hta.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
