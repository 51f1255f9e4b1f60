-- perfetto/slices: every selected span as a Perfetto slice, with what the writer needs to
-- order them (xsp_trace/perfetto/slice_order.py sorts each part: by track, CPU tracks first, and
-- within a track by start, longest first, outermost first) -- unsorted here: DuckDB's sort of
-- every column on ten keys cost more than the rest of the export.
--
-- From: perfetto_spans (queries/perfetto/select.sql) and perfetto_phases (perfetto/slice_parts.sql);
-- each span's track comes as a hash of its key (the keys: perfetto_span_tracks, select.sql);
-- a part's flows come from perfetto/slice_part_flows.sql, its kernel and memop columns from
-- perfetto/slice_part_details.sql, its span_args from perfetto/slice_part_args.sql: queries of
-- their own, placed beside their spans in numpy (most spans have none of them);
-- one part of the spans: run getvariable('xsp_perfetto_part_run'),
-- start in [xsp_perfetto_part_first, xsp_perfetto_part_last]. Every table is read through that same
-- start range (a detail row has its span's start), so a part costs what its own rows cost.
SELECT
    -- The span's track: perfetto_span_tracks.track_hash of its key (run, track class, pid of
    -- thread and process tracks, tid, device, stream), computed alike.
    hash(getvariable('xsp_perfetto_track_salt'), s.run_id, s.track_class, CASE WHEN s.track_class IN ('thread', 'process') THEN s.pid END,
         s.tid, s.device_id, s.stream_id) AS track_hash,
    -- The span.
    s.span_id,
    -- Level of the stack; the slice's category.
    s.kind,
    -- The slice's name.
    s.name,
    -- Slice start in the trace: the span start less the run's shift.
    s.start_ns - s.shift_ns AS ts,
    -- Slice end in the trace.
    greatest(s.end_ns, s.start_ns) - s.shift_ns AS end_ts,
    -- The span's own end (run clock; may precede its start): longest first among equal starts.
    s.end_ns AS span_end_ns,
    -- Depth of the span in its stack: outermost first among equal starts and ends.
    s.depth,
    -- Details shown as debug annotations (NULL ones are left out).
    s.correlation_id,
    -- Iteration of the span.
    s.iteration,
    -- Layer index of layer spans.
    s.layer_index,
    -- Training phase the span is charged to (forward, backward, optimizer), where the trace says.
    att.phase,
    -- Source category (NVTX domain, Kineto category, nsys API class).
    s.category,
    -- How an NVTX range was made: push_pop or start_end.
    s.range_style
FROM (
    SELECT * FROM perfetto_spans
    WHERE run_id = getvariable('xsp_perfetto_part_run')
      AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last')
) AS s
LEFT JOIN (SELECT * FROM perfetto_phases WHERE run_id = getvariable('xsp_perfetto_part_run')
           AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last')) AS att
    ON att.run_id = s.run_id AND att.span_id = s.span_id;
