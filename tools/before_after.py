"""What a change bought: the same convert by two checkouts (before: another checkout, e.g. main;
after: this one), alternating, each run a fresh process (wall + peak RSS, bench/peers/children.py), in
one sitting on the same input (bench/peers/scaled_inputs.py).

    python -m tools.before_after /work/main kineto 100M --repeats 3
    python -m tools.before_after /work/main nsys 30
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.peers.children import ROOT, log, measure, python_script
from bench.peers.scaled_inputs import DATA, parse_size, scaled_kineto, scaled_nsys

# The child (python_script puts the checkout's xsp_trace first): the input, the output.
CONVERT = """
import sys
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_inputs
convert_inputs([Path(sys.argv[1])], Path(sys.argv[2]), ConvertOptions(), overwrite=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="the checkout before the change")
    parser.add_argument("kind", choices=("kineto", "nsys"))
    parser.add_argument("size", help="Kineto JSON size (100M, 1G) or nsys growth factor (30, 290)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    path = scaled_kineto(parse_size(args.size)) if args.kind == "kineto" else scaled_nsys(int(args.size))
    checkouts = {"before": args.before.resolve(), "after": ROOT}
    out = DATA / "_before_after.duckdb"
    runs: dict[str, list[dict]] = {k: [] for k in checkouts}
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    for _ in range(args.repeats):
        for label, checkout in checkouts.items():
            log(f"{path.name}: {label}")
            runs[label].append(measure(python_script(CONVERT, path, out, checkout=checkout)))
            out.unlink(missing_ok=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}\n")
    print("| input | code | runs s | best s | peak MiB (max) |\n| --- | --- | --- | ---: | ---: |")
    for label, results in runs.items():
        seconds = [r["seconds"] for r in results]
        print(
            f"| {path.name} | {label} ({checkouts[label]}) | {', '.join(f'{s:.1f}' for s in seconds)} | {min(seconds):.1f} | "
            f"{max(r['peak_mib'] for r in results):.0f} |"
        )
    best = {label: min(r["seconds"] for r in results) for label, results in runs.items()}
    print(f"\nafter / before (best): {best['after'] / best['before']:.2f}x")


if __name__ == "__main__":
    main()
