"""The Perfetto export of two checkouts (before: e.g. main; after: this one) read back by Perfetto's
trace processor: every slice (track, ts, dur, name, category, depth, parent, debug annotations),
every flow and every track must be the same. Each export runs in a fresh process with the
checkout's own xsp_trace; the databases are converted once by this checkout. It reads the traces
back with the test suite's harness (tests/perfetto_harness/), so tests/ goes on PYTHONPATH:

    PYTHONPATH=tests python -m tools.perfetto_identity /work/main                       # the fixtures
    PYTHONPATH=tests python -m tools.perfetto_identity /work/main bench/data/nsys_h100_x30.duckdb
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.peers.children import ROOT, python_script

TESTS = ROOT / "tests"

FIXTURES = [
    TESTS / "data" / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite",
    TESTS / "data" / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz",
    TESTS / "data" / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz",
]

# The child (python_script puts the checkout's xsp_trace first): the database, the trace to write.
EXPORT = """
import sys
from xsp_trace.perfetto import export_perfetto
stats = export_perfetto(sys.argv[1], sys.argv[2])
print(stats.slices, stats.flows)
"""


def _export(checkout: Path, database: Path, output: Path) -> str:
    done = subprocess.run(python_script(EXPORT, database, output, checkout=checkout.resolve()), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _databases(paths: list[Path], folder: Path) -> list[Path]:
    from perfetto_harness import handmade_db
    from xsp_trace.convert import ConvertOptions, convert_files

    found = []
    for path in paths:
        if path.suffix == ".duckdb":
            found.append(path)
            continue
        database = folder / f"{path.name.split('.')[0]}.duckdb"
        convert_files([path], database, ConvertOptions())
        found.append(database)
    if not paths or paths == FIXTURES:
        found.append(handmade_db.build(folder / "handmade.duckdb"))
    return found


def main() -> None:
    from test_perfetto_columnar_encoding import _decoded

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="the other checkout (e.g. /work/main)")
    parser.add_argument("inputs", nargs="*", type=Path, help="databases or traces (default: the fixtures and the handmade database)")
    args = parser.parse_args()
    different = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for database in _databases(args.inputs or FIXTURES, folder):
            traces = {name: folder / f"{database.stem}.{name}.pftrace" for name in ("before", "after")}
            counts = {name: _export(checkout, database, traces[name]) for name, checkout in (("before", args.before), ("after", ROOT))}
            decoded = {name: _decoded(trace) for name, trace in traces.items()}
            same = [table for table in ("slices", "flows", "tracks") if decoded["before"][table] == decoded["after"][table]]
            sizes = {name: sum(decoded[name][t].total() for t in ("slices", "flows", "tracks")) for name in decoded}
            verdict = "SAME" if len(same) == 3 and counts["before"] == counts["after"] else "DIFFERENT"
            different += verdict != "SAME"
            print(
                f"{database.name}: slices+flows+tracks {sizes['before']:,} / {sizes['after']:,} (slices flows: {counts['before']} / {counts['after']}): {verdict}",
                flush=True,
            )
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
