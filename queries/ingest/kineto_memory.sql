-- ingest/kineto_memory: the Kineto [memory] instant events of one piece as allocator events
-- (memory_events); kineto_map.sql makes the same events counters.
--
-- From: the piece's _kineto_events, the macros and argument keys kineto_map.sql set up for it (run
-- right after it, on the same piece), and variables kineto_memory_* holding the facts of
-- xsp_trace.formats.kineto_fields. An event without a recorded "Bytes" is left out.

INSERT INTO memory_events BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Memory instants as allocator events: the position in traceEvents orders events of one time.
    event_index, _kineto_ns(ts) AS ts_ns, _kineto_int_text(pid) AS pid, _kineto_int_text(tid) AS tid,
    -- GPU memory: the device; host memory: NULL (as kineto_map.sql's memory counters).
    CASE WHEN list_contains(getvariable('kineto_memory_gpu_types'), _kineto_int(_kineto_arg(a, getvariable('kineto_memory_device_type_arg'))))
         THEN _kineto_int(_kineto_arg(a, getvariable('kineto_memory_device_id_arg'))) END AS device_id,
    _kineto_int(_kineto_arg(a, getvariable('kineto_memory_addr_arg'))) AS addr,
    _kineto_int(_kineto_arg(a, getvariable('kineto_memory_bytes_arg'))) AS bytes,
    _kineto_int(_kineto_arg(a, getvariable('kineto_memory_counter_args')[1])) AS total_allocated,
    _kineto_int(_kineto_arg(a, getvariable('kineto_memory_counter_args')[2])) AS total_reserved
FROM (SELECT ts, pid, tid, _kineto_args(args) AS a, rowid + getvariable('kineto_event_offset') AS event_index FROM _kineto_events
      WHERE list_contains(getvariable('kineto_phase_instant'), ph) AND name = getvariable('kineto_memory_instant'))
WHERE _kineto_int(_kineto_arg(a, getvariable('kineto_memory_bytes_arg'))) IS NOT NULL
ORDER BY event_index;
