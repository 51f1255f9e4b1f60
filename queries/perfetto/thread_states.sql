-- perfetto/thread_states: the selected thread states (running, descheduled) as slices, one
-- track of them per thread.
--
-- From: thread_states, perfetto_runs (queries/perfetto/select.sql: shift and window; a state
-- that crosses the window is cut at its edges, one before the shift starts there).
SELECT
    -- Run of the thread.
    t.run_id,
    -- Process of the thread.
    t.pid,
    -- The thread.
    t.tid,
    -- running or descheduled (the slice's name).
    t.state AS name,
    -- CPU core of the switch.
    t.cpu,
    -- Start in the trace, less the run's shift.
    greatest(t.start_ns, r.shift_ns, coalesce(r.window_start_ns, t.start_ns)) - r.shift_ns AS ts,
    -- End in the trace, less the run's shift.
    least(t.end_ns, coalesce(r.window_end_ns, t.end_ns)) - r.shift_ns AS end_ts
FROM thread_states AS t
JOIN perfetto_runs AS r USING (run_id)
WHERE (getvariable('xsp_perfetto_kinds') IS NULL OR list_contains(getvariable('xsp_perfetto_kinds'), 'thread_state'))
  AND t.pid IS NOT NULL AND t.tid IS NOT NULL AND t.end_ns > r.shift_ns
  AND (r.window_end_ns IS NULL OR t.start_ns < r.window_end_ns)
  AND (r.window_start_ns IS NULL OR t.end_ns > r.window_start_ns)
ORDER BY t.run_id, t.pid, t.tid, t.start_ns;
