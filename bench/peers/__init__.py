"""The peers benchmark: xsp-trace against the tools users would otherwise run (nsys stats and
analyze, nsys-ai, Holistic Trace Analysis, DuckDB writing Parquet), side by side in one run; it
writes the generated table of BENCHMARKS.md. Run it from the checkout's top:

    python -m bench.peers --help

__main__.py runs the table; same_job.py the peers doing the same job; floors.py and
convert_per_mb.py its extra tables; children.py how each tool runs (a fresh, measured process);
scaled_inputs.py and make_scaled_nsys.py the inputs; targets.json the thresholds it judges.
"""
