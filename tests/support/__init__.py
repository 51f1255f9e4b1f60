"""Helpers the tests share (imported as `support.<module>`; tests/ is on pytest's path):

- handmade.py: the one builder of hand-made databases (`Run` rows, `write` correlates them like a
  converted trace); every hand-made fixture is written through it.
- leveled.py: a tiny leveled capture (M, ML, MLG and a plain run) built with it.
- steps.py: hand-made steps whose critical paths and what-if predictions the tests work out by hand.

The fuzzer that both tests/test_fuzz.py and bench/fuzz_long.py run lives in bench/fuzzing/ (bench
never imports tests/; pytest puts bench/ on the path).
"""
