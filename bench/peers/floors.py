"""What a part of the conversion costs alone, against the peer's whole run: the peers benchmark's "floors".

A target like "convert + kernel summary <= 3x nsys stats" is out of reach for this design when a
part every design of the schema must do already takes the budget. Two parts, each a fresh process
on the same input as the main table, in the same run:

- reading: the input into DuckDB and nothing more -- nsys: the export's tables into the staging
  tables (the parallel native readers of every convert); Kineto: decompress, cut and read_json every
  piece (each piece dropped where the mapping would start).
- writing: the finished output of the main table's convert copied into a fresh database file
  (`COPY FROM DATABASE`, CHECKPOINT included): the tables every convert to this schema writes,
  with nothing computed. Without the convert's memory cap: under it the copy of the 1 M-kernel
  output took 6.8-7.0 s on ~1.1 cores instead of 4.1-4.2 s on ~1.8, and without it its peak (~510
  MiB) is still inside the memory targets, so the cheaper way is the floor. Reading keeps the cap:
  without it its peak is 1.1 GB.
- reading + writing: the two added up (wall and CPU seconds): what a convert costs before it
  computes anything. Both parts keep this machine's cores busy (CPU ~ cores x wall), so running
  them side by side would not make the sum much smaller.
- without correlation: the whole convert and the kernel summary, correlate_run skipped -- the
  convert a design computing nesting, launches, ancestors and attribution on first use would run.

Run alone:  python -m bench.peers.floors nsys bench/data/nsys_h100_x290.sqlite [its converted .duckdb, for writing]
"""

from __future__ import annotations

import sys
from pathlib import Path

from .children import PRELUDE, log, measure, python_script
from .scaled_inputs import DATA, parse_size, scaled_kineto, scaled_nsys
from .targets import ISSUE_12

NSYS_READING = (
    PRELUDE
    + """
from contextlib import closing
from pathlib import Path
from xsp_trace.convert.common import no_progress
from xsp_trace.convert.nsys.converter import _Export, _stage_all  # the staging step alone: private on purpose
from xsp_trace.store.connection import duckdb_connect
from xsp_trace.store.connection import CONVERT_MEMORY_LIMIT, memory_limit
con = duckdb_connect()
with closing(_Export(Path(sys.argv[1]))) as export, memory_limit(con, CONVERT_MEMORY_LIMIT):
    _stage_all(export, con, no_progress)
"""
)

KINETO_READING = (
    PRELUDE
    + """
from pathlib import Path
from xsp_trace.convert.input_limits import InputLimits
from xsp_trace.convert.kineto.duckdb_reader import read_events
from xsp_trace.store.connection import duckdb_connect
from xsp_trace.store.connection import CONVERT_MEMORY_LIMIT, memory_limit
con = duckdb_connect()
with memory_limit(con, CONVERT_MEMORY_LIMIT):
    meta = read_events(con, Path(sys.argv[1]), lambda offset: con.execute("DROP TABLE _kineto_events"), InputLimits())
assert meta is not None, 'not read by DuckDB'
"""
)

WRITING = (
    PRELUDE
    + """
from xsp_trace.store.connection import duckdb_connect
con = duckdb_connect()
con.execute("ATTACH ? AS finished (READ_ONLY)", [sys.argv[1]])
con.execute("ATTACH ? AS fresh", [sys.argv[2]])
con.execute("COPY FROM DATABASE finished TO fresh")
con.execute("CHECKPOINT fresh")
"""
)

WITHOUT_CORRELATION = (
    PRELUDE
    + """
from pathlib import Path
import xsp_trace.convert.dispatch as dispatch
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.resources import query_text
from xsp_trace.store.opening import open_store
dispatch.correlate_run = lambda *args: None  # whatever its arguments
out = Path(sys.argv[2])
convert_files([Path(sys.argv[1])], out, ConvertOptions(), overwrite=True)
rows = open_store(out).execute(query_text('analyses/top_kernels')).fetchall()
assert rows, 'no kernels'
"""
)


def floor_rows(input_path: Path, kind: str, finished: Path | None = None) -> dict:
    """{'reading', 'writing', 'reading_writing', 'without_correlation': measurement} of `input_path`
    (kind 'nsys' or 'kineto'); writing and reading + writing only with the `finished` output of its convert."""
    reading = NSYS_READING if kind == "nsys" else KINETO_READING
    out = DATA / f"_floor_{input_path.stem}.duckdb"
    rows = {"reading": measure(python_script(reading, input_path))}
    if finished is not None and finished.exists():
        rows["writing"] = measure(python_script(WRITING, finished, out))
        out.unlink(missing_ok=True)
        rows["reading_writing"] = {
            "seconds": rows["reading"]["seconds"] + rows["writing"]["seconds"],
            "cpu_seconds": rows["reading"]["cpu_seconds"] + rows["writing"]["cpu_seconds"],
            "peak_mib": max(rows["reading"]["peak_mib"], rows["writing"]["peak_mib"]),
        }
    rows["without_correlation"] = measure(python_script(WITHOUT_CORRELATION, input_path, out))
    out.unlink(missing_ok=True)
    return rows


def rows_for(result: dict) -> list[dict]:
    """The floors' parts alone on the inputs the time targets are judged on: the nsys export
    nearest 1 M kernels (budget: issue 12's multiple of nsys stats gpukernsum) and the largest Kineto
    trace HTA ran on (budget: HTA's time over issue 12's speed-up)."""
    rows = []
    nsys = [r for r in result["nsys"] if r.get("nsys_stats")]
    if nsys:
        million = min(nsys, key=lambda r: abs(r["kernels"] - 1_000_000))
        log(f"{million['input']}: floors")
        peer, at_most = million["nsys_stats"]["seconds"], ISSUE_12["nsys_convert_vs_stats_time"]
        path = scaled_nsys(int(million["input"].rsplit("x", 1)[1]))
        rows.append(
            {"input": million["input"], "peer": "nsys stats gpukernsum", "peer_seconds": peer, "target": f"<= {at_most:g}x", "budget": at_most * peer}
            | floor_rows(path, "nsys", Path(million["database"]) if million.get("database") else None)
        )
    kineto = [r for r in result["kineto"] if r.get("hta")]
    if kineto:
        gb = max(kineto, key=lambda r: r["json_bytes"])
        log(f"{gb['input']}: floors")
        peer, faster = gb["hta"]["seconds"], ISSUE_12["kineto_vs_hta_speedup"]
        path = scaled_kineto(parse_size(gb["input"].rsplit(" ", 1)[1]))
        rows.append(
            {
                "input": gb["input"],
                "peer": "HTA load + kernel breakdown",
                "peer_seconds": peer,
                "target": f">= {faster:g}x faster",
                "budget": peer / faster,
            }
            | floor_rows(path, "kineto", Path(gb["database"]) if gb.get("database") else None)
        )
    return rows


PARTS = (
    ("reading", "reading only (into DuckDB)"),
    ("writing", "writing only (the finished output into a fresh file)"),
    ("reading_writing", "reading + writing (nothing computed)"),
    ("without_correlation", "convert + summary, no correlation"),
)


def markdown(rows: list[dict]) -> list[str]:
    """The floors table: each part's seconds (wall, CPU), its ratio to the peer, and the share of the target's budget it takes."""
    if not rows:
        return []
    out = [
        "### Floors: parts of the conversion alone vs the peer's whole run (bench/peers/floors.py)",
        "",
        "| input | peer | peer s | target | budget s | part | s | CPU s | part / peer | share of budget | peak MiB |",
        "| --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        for part, label in PARTS:
            m = r.get(part)
            if m is None:
                continue
            cpu = f"{m['cpu_seconds']:.1f}" if m.get("cpu_seconds") is not None else "-"
            out.append(
                f"| {r['input']} | {r['peer']} | {r['peer_seconds']:.1f} | {r['target']} | {r['budget']:.1f} | {label} | "
                f"{m['seconds']:.1f} | {cpu} | {m['seconds'] / r['peer_seconds']:.2f}x | {m['seconds'] / r['budget'] * 100:.0f} % | {m['peak_mib']:.0f} |"
            )
    return out + [""]


if __name__ == "__main__":
    print(floor_rows(Path(sys.argv[2]), sys.argv[1], Path(sys.argv[3]) if len(sys.argv) > 3 else None))
