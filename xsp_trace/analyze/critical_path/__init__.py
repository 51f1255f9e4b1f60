"""The critical path and what-if replay: `run.py` loads a run (its threads, spans, launches and
waits as arrays), `walk.py` walks a unit's path backwards and builds `xsp_critical_path`,
`chase.py` and `threads.py` follow it across threads and streams, `what_if.py` replays a run with
changed durations and builds `xsp_what_if`."""
