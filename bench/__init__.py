"""Benchmarks, run from the checkout's top as modules (`python -m bench.NAME`): see bench/README.md."""
