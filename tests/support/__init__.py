"""Helpers the tests share (imported as `support.<module>`; tests/ is on pytest's path):

- handmade.py: the one builder of hand-made databases (`Run` rows, `write` correlates them like a
  converted trace); every hand-made fixture is written through it.
- leveled.py: a tiny leveled capture (M, ML, MLG and a plain run) built with it.
- steps.py: hand-made steps whose critical paths and what-if predictions the tests work out by hand.

- fuzzing/: the fuzzer, run by tests/test_fuzz.py and (long runs) `python -m tests.support.fuzz_long`.
- perfetto_reference_writer.py: the per-row Perfetto writer the columnar encoder replaced, the
  reference tests/test_perfetto_columnar_encoding.py decodes against.
"""
