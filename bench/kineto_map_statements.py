"""Seconds per statement of queries/ingest/kineto_map.sql over a Kineto trace, in the convert itself.

Runs the ordinary convert of the trace (DuckDB reader, pieces) with the mapping script run one
statement at a time (DuckDB's own statement split), and prints each statement's total over all
pieces, slowest first (statements alike in bench/convert_statements.py's label summed, their count
beside), under the convert's and the mapping's totals: that script's timing, kept to the mapping. The checkout to measure is the
one `--checkout` names (default this one; its xsp_trace imported in place of this one's), so a second checkout runs the same harness:

    python -m bench.kineto_map_statements 100M [--checkout /work/main] [--rounds 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.convert_statements import Timings, time_statements
from bench.peers.children import import_checkout
from bench.peers.scaled_inputs import parse_size, scaled_kineto

BENCH = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", default="100M")
    parser.add_argument("--checkout", type=Path, default=BENCH.parent)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    import_checkout(args.checkout)
    from xsp_trace.convert import ConvertOptions, convert_inputs
    from xsp_trace.resources import query_text

    path = scaled_kineto(parse_size(args.size))
    timings = Timings()
    time_statements(timings, scripts={query_text("ingest/kineto_map")})
    for round_number in range(args.rounds):
        timings.rows = {}
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            convert_inputs([path], Path(folder) / "out.duckdb", ConvertOptions(), overwrite=True)
            total = time.perf_counter() - start
        mapped = sum(seconds for _, seconds, _ in timings.rows.values())
        print(f"round {round_number + 1}: {path.name} via {args.checkout}: convert {total:.2f} s, kineto_map {mapped:.2f} s")
        print("| statement | calls | seconds |\n| --- | ---: | ---: |")
        for label, (calls, seconds, _) in sorted(timings.rows.items(), key=lambda kv: -kv[1][1]):
            if seconds >= 0.01:
                print(f"| `{label}` | {calls} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
