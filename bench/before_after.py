"""What a change bought: the same convert by two checkouts (before: another checkout, e.g. main;
after: this one), alternating, each run a fresh process (wall + peak RSS, bench/children.py), in
one sitting on the same input (bench/scaled_inputs.py).

    python bench/before_after.py /work/main kineto 100M --repeats 3
    python bench/before_after.py /work/main nsys 30
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from children import log, measure, python_script  # noqa: E402
from scaled_inputs import DATA, parse_size, scaled_kineto, scaled_nsys  # noqa: E402

CONVERT = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_inputs
convert_inputs([Path(sys.argv[2])], Path(sys.argv[3]), ConvertOptions(), overwrite=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="the checkout before the change")
    parser.add_argument("kind", choices=("kineto", "nsys"))
    parser.add_argument("size", help="Kineto JSON size (100M, 1G) or nsys growth factor (30, 290)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    path = scaled_kineto(parse_size(args.size)) if args.kind == "kineto" else scaled_nsys(int(args.size))
    checkouts = {"before": args.before.resolve(), "after": BENCH.parent}
    out = DATA / "_before_after.duckdb"
    runs: dict[str, list[dict]] = {k: [] for k in checkouts}
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    for _ in range(args.repeats):
        for label, checkout in checkouts.items():
            log(f"{path.name}: {label}")
            runs[label].append(measure(python_script(CONVERT, checkout, path, out)))
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
