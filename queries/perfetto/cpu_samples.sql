-- perfetto/cpu_samples: the selected CPU samples as instants on their thread's track.
--
-- From: cpu_samples, perfetto_runs (queries/perfetto/select.sql: shift and window); samples
-- before the run's shift are left out (Perfetto's times are unsigned).
SELECT
    -- Run of the sample.
    s.run_id,
    -- Process of the sampled thread.
    s.pid,
    -- The sampled thread.
    s.tid,
    -- The sampled function (the instant's name).
    coalesce(s.function, '(no call chain)') AS name,
    -- Its binary or library.
    s.module,
    -- Thread state when sampled.
    s.thread_state,
    -- Time in the trace: the sample time less the run's shift.
    s.ts_ns - r.shift_ns AS ts
FROM cpu_samples AS s
JOIN perfetto_runs AS r USING (run_id)
WHERE (getvariable('xsp_perfetto_kinds') IS NULL OR list_contains(getvariable('xsp_perfetto_kinds'), 'cpu_sample'))
  AND s.pid IS NOT NULL AND s.tid IS NOT NULL AND s.ts_ns >= r.shift_ns
  AND (r.window_end_ns IS NULL OR s.ts_ns < r.window_end_ns)
  AND (r.window_start_ns IS NULL OR s.ts_ns >= r.window_start_ns)
ORDER BY s.run_id, s.pid, s.tid, s.ts_ns;
