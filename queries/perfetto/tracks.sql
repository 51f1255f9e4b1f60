-- perfetto/tracks: the Perfetto tracks an export needs, with the names to show on them.
--
-- From: perfetto_span_tracks, perfetto_marks, perfetto_counters (queries/perfetto/select.sql),
-- perfetto_runs, processes, threads, devices.
-- One row per track: a CPU thread, a process (process-wide spans, marks, counters), a GPU
-- stream, a GPU device (device counters), or a whole run (spans/marks/counters owned by
-- neither). The writer adds the parent process / device tracks these need.
WITH
    used AS (
        SELECT run_id, track_class, pid, tid, device_id, stream_id FROM perfetto_span_tracks
        UNION
        SELECT DISTINCT run_id,
               CASE WHEN tid IS NOT NULL THEN 'thread' WHEN pid IS NOT NULL THEN 'process' ELSE 'run' END,
               pid, tid, NULL, NULL
        FROM perfetto_marks
        UNION
        SELECT DISTINCT run_id,
               CASE WHEN pid IS NOT NULL THEN 'process' WHEN device_id IS NOT NULL THEN 'device' ELSE 'run' END,
               pid, NULL, CASE WHEN pid IS NULL THEN device_id END, NULL
        FROM perfetto_counters
    )
SELECT
    -- Run of the track.
    u.run_id,
    -- thread, process, gpu (one stream of a device), device, or run.
    u.track_class,
    -- Process id (thread and process tracks; the launching process is not used for GPU tracks).
    CASE WHEN u.track_class IN ('thread', 'process') THEN u.pid END AS pid,
    -- Thread id (thread tracks).
    u.tid,
    -- CUDA device ordinal (gpu and device tracks).
    u.device_id,
    -- GPU stream (gpu tracks).
    u.stream_id,
    -- Position of the stream among its device's streams, from 0 in stream id order.
    CASE WHEN u.track_class = 'gpu'
         THEN row_number() OVER (PARTITION BY u.run_id, u.track_class, u.device_id ORDER BY u.stream_id NULLS LAST) - 1
    END AS stream_ordinal,
    -- perfetto_runs.title of the run.
    r.title,
    -- Name of the process, where recorded.
    p.name AS process_name,
    -- Name of the thread, where recorded.
    t.name AS thread_name,
    -- Marketing name of the device, where recorded.
    d.name AS device_name
FROM (SELECT DISTINCT * FROM used) AS u
JOIN perfetto_runs AS r USING (run_id)
LEFT JOIN processes AS p ON p.run_id = u.run_id AND p.pid = u.pid AND u.track_class IN ('thread', 'process')
LEFT JOIN threads AS t ON t.run_id = u.run_id AND t.pid = u.pid AND t.tid = u.tid
LEFT JOIN devices AS d ON d.run_id = u.run_id AND d.device_id = u.device_id
ORDER BY u.run_id, u.track_class, pid, u.tid, u.device_id, u.stream_id NULLS LAST;
