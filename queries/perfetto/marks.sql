-- perfetto/marks: the selected instant events (NVTX marks, Kineto instants) as Perfetto
-- instants, by track.
--
-- From: perfetto_marks (queries/perfetto/select.sql).
SELECT
    -- Run of the mark.
    run_id,
    -- Track class: thread, process or run (as in perfetto_tracks).
    CASE WHEN tid IS NOT NULL THEN 'thread' WHEN pid IS NOT NULL THEN 'process' ELSE 'run' END AS track_class,
    -- Process of the mark.
    pid,
    -- Thread of the mark.
    tid,
    -- Mark text (the instant's name).
    coalesce(name, '(unnamed mark)') AS name,
    -- NVTX domain or Kineto category.
    category,
    -- Time in the trace: the mark time less the run's shift.
    ts_ns - shift_ns AS ts
FROM perfetto_marks
ORDER BY run_id, track_class, pid, tid, ts_ns;
