-- perfetto/select: what a Perfetto export shows -- the chosen runs, their time origin, and
-- their spans, marks and counter samples inside the chosen window and kinds.
--
-- From: runs, xsp_time_zeros (each run's time zero on its clock: xsp_trace/store/run_alignment.py), spans, marks,
-- counters, memory_events, and variables set by xsp_trace.perfetto:
--   xsp_perfetto_run_ids  INTEGER[] or NULL (all runs)
--   xsp_perfetto_kinds    VARCHAR[] or NULL (all span kinds; 'mark' and 'counter' select
--                         marks and counter samples)
--   xsp_perfetto_from_ns, xsp_perfetto_to_ns  BIGINT or NULL (open): the window, in ns after
--                         each run's time zero; a span is kept if it overlaps [from, to)
--   xsp_perfetto_align    VARCHAR: origin or utc (every run's time zero at 0), own (each run's
--                         own clock)
-- Creates TEMP TABLEs perfetto_runs and perfetto_span_tracks and TEMP VIEWs perfetto_spans,
-- perfetto_marks, perfetto_counters, read by the other perfetto_*.sql queries.

CREATE OR REPLACE TEMP TABLE perfetto_runs AS
SELECT
    -- The run.
    r.run_id,
    -- The run's origin, runs.origin_ns (its first span, mark or counter sample): aligned by origin,
    -- the exported trace puts it at 0, so a time analyze shows is the time ui.perfetto.dev shows.
    r.origin_ns,
    -- Subtracted from every timestamp of the run: its time zero (the origin, or under utc the
    -- selected runs' shared first instant), or with own only what keeps timestamps non-negative
    -- (Perfetto timestamps are unsigned).
    CASE WHEN getvariable('xsp_perfetto_align') = 'own' THEN least(r.origin_ns, 0) ELSE z.zero_ns END AS shift_ns,
    -- Start of the window on the run clock (NULL: open).
    z.zero_ns + getvariable('xsp_perfetto_from_ns') AS window_start_ns,
    -- End of the window on the run clock (NULL: open).
    z.zero_ns + getvariable('xsp_perfetto_to_ns') AS window_end_ns,
    -- Name prefix that tells this run's tracks apart from other runs' tracks.
    concat_ws(' · ', 'run ' || r.run_id, r.source_kind, r.level, r.model,
              'batch ' || r.batch_size, 'rank ' || r.rank, r.label) AS title
FROM runs AS r
JOIN xsp_time_zeros AS z USING (run_id)  -- only runs with events: a run without has nothing to show
WHERE (getvariable('xsp_perfetto_run_ids') IS NULL
       OR list_contains(getvariable('xsp_perfetto_run_ids'), r.run_id));

CREATE OR REPLACE TEMP VIEW perfetto_spans AS
SELECT
    -- Every spans column of the selected span.
    s.*,
    -- perfetto_runs.shift_ns of its run.
    r.shift_ns,
    -- Which kind of Perfetto track the span goes on: thread (CPU spans), gpu (a stream of a
    -- device), process (a process-wide span without thread), run (no process either).
    CASE
        WHEN s.tid IS NOT NULL THEN 'thread'
        WHEN s.device_id IS NOT NULL OR s.stream_id IS NOT NULL THEN 'gpu'
        WHEN s.pid IS NOT NULL THEN 'process'
        ELSE 'run'
    END AS track_class
FROM spans AS s
JOIN perfetto_runs AS r USING (run_id)
WHERE (getvariable('xsp_perfetto_kinds') IS NULL OR list_contains(getvariable('xsp_perfetto_kinds'), s.kind))
  -- Overlap with [start, end); a zero-length span counts as one ns long.
  AND (r.window_end_ns IS NULL OR s.start_ns < r.window_end_ns)
  AND (r.window_start_ns IS NULL OR greatest(s.end_ns, s.start_ns + 1) > r.window_start_ns);

CREATE OR REPLACE TEMP VIEW perfetto_marks AS
SELECT
    -- Every marks column of the selected mark.
    m.*,
    -- perfetto_runs.shift_ns of its run.
    r.shift_ns
FROM marks AS m
JOIN perfetto_runs AS r USING (run_id)
WHERE (getvariable('xsp_perfetto_kinds') IS NULL OR list_contains(getvariable('xsp_perfetto_kinds'), 'mark'))
  AND (r.window_end_ns IS NULL OR m.ts_ns < r.window_end_ns)
  AND (r.window_start_ns IS NULL OR m.ts_ns >= r.window_start_ns);

-- Counter samples: the counters table, and for a process and device whose allocator events record
-- no "Total Allocated" (Kineto before 2022) the bytes in use since the trace began, summed from the
-- events' own bytes in the allocator's order (lib/memory.sql), so such a trace has a memory track too.
CREATE OR REPLACE TEMP VIEW perfetto_counters AS
WITH samples AS (
    SELECT run_id, name, ts_ns, value, pid, device_id FROM counters
    UNION ALL
    SELECT run_id, 'Allocated since the trace began' AS name, ts_ns,
           sum(bytes) OVER (PARTITION BY run_id, pid, device_id ORDER BY ts_ns, event_index) AS value, pid, device_id
    FROM memory_events AS e
    WHERE NOT EXISTS (SELECT 1 FROM memory_events AS t
                      WHERE t.run_id = e.run_id AND t.pid IS NOT DISTINCT FROM e.pid AND t.device_id IS NOT DISTINCT FROM e.device_id
                        AND t.total_allocated IS NOT NULL)
)
SELECT
    -- Run of the sample.
    c.run_id,
    -- Counter name.
    c.name,
    -- Sample time, ns on the run clock.
    c.ts_ns,
    -- Sample value.
    c.value,
    -- Process the counter belongs to, or NULL.
    c.pid,
    -- Device the counter belongs to, or NULL.
    c.device_id,
    -- perfetto_runs.shift_ns of its run.
    r.shift_ns
FROM samples AS c
JOIN perfetto_runs AS r USING (run_id)
WHERE (getvariable('xsp_perfetto_kinds') IS NULL OR list_contains(getvariable('xsp_perfetto_kinds'), 'counter'))
  AND (r.window_end_ns IS NULL OR c.ts_ns < r.window_end_ns)
  AND (r.window_start_ns IS NULL OR c.ts_ns >= r.window_start_ns);

-- The tracks the selected spans go on, each with the hash perfetto/slices.sql gives its spans
-- instead of the six columns of the key: the writer looks the track up by it (every row of a part
-- would otherwise carry the key, and the writer group them again).
CREATE OR REPLACE TEMP TABLE perfetto_span_tracks AS
SELECT DISTINCT
    -- Run of the track.
    run_id,
    -- perfetto_spans.track_class.
    track_class,
    -- Process id of thread and process tracks (NULL for the others: a GPU stream is one track
    -- whichever process launched its work).
    CASE WHEN track_class IN ('thread', 'process') THEN pid END AS pid,
    -- Thread id of thread tracks.
    tid,
    -- CUDA device ordinal of gpu tracks.
    device_id,
    -- GPU stream of gpu tracks.
    stream_id,
    -- hash() of the six columns above salted with getvariable('xsp_perfetto_track_salt'), as
    -- perfetto/slices.sql computes it (the writer checks that no two tracks share one).
    hash(getvariable('xsp_perfetto_track_salt'), run_id, track_class, CASE WHEN track_class IN ('thread', 'process') THEN pid END,
         tid, device_id, stream_id) AS track_hash
FROM perfetto_spans;
