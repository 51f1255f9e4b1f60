"""Change checks, run from the checkout's top as modules (`python -m tools.NAME`): see tools/README.md."""
