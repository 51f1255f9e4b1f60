-- ingest/kineto_map: the one mapping of Kineto events into the Kineto staging and side tables.
--
-- From: the raw event relation _kineto_events that every reader fills (DuckDB's JSON reader, or
-- the streaming ijson reader for odd files; xsp_trace/convert/kineto/events.py): one row per
-- element of traceEvents in file order (rowid = position; ts/dur DECIMAL microseconds; cat, name,
-- pid, tid, id as text; args the JSON object as read), and variables kineto_* holding the facts of
-- xsp_trace.formats.kineto_fields (set by xsp_trace/convert/kineto/converter.py).
-- In pieces: the relation may hold one piece of traceEvents (xsp_trace/convert/kineto/duckdb_reader.py);
-- the script then runs once per piece, in file order, with getvariable('kineto_event_offset')
-- the events and getvariable('kineto_span_offset') the spans of the pieces before (0 and 0 for
-- the whole trace). Everything it writes is appended, so the pieces give what the whole would.
-- Writes: _kineto_spans, _kineto_flows, _kineto_launch_config (then queries/ingest/kineto_link.sql runs),
-- kernels, memops, span_args, marks, counters of run getvariable('xsp_run_id'), _kineto_name_events
-- (the metadata events naming processes and threads, by event index: kineto_link.sql keeps the
-- last of each) and _kineto_skipped (CPU events of this piece not mapped because their pid or tid
-- is not an integer: the caller sums them and warns with the count).
-- Times were checked before (xsp_trace/convert/kineto/events.py check_events): every time used
-- here lies within +-getvariable('kineto_time_limit_us'); flows outside it are left out.
-- Rules: ns = round half away from zero of us * 1000, an end from ts + dur; integers are JSON
-- integers, integral decimals or digit strings; category matched lower-case.
-- Args: the keys of every args object of the relation, each as a JSON pointer (any key, even ""
-- or one with '/' or '~', is addressable so); an event's args are parsed once, by one json_extract
-- of all of them (a list of JSON values in the order of the keys, NULL where the event has no such
-- key), and looked up by name from that list. An object that repeats a key (the list keeps the
-- first, the streaming reader the last) is counted in _kineto_skipped: the caller hands the file to
-- the streaming reader.

SET VARIABLE kineto_piece_arg_keys = (
    SELECT coalesce(list(DISTINCT k ORDER BY k), []) FROM (SELECT unnest(json_keys(args)) AS k FROM _kineto_events));
SET VARIABLE kineto_piece_arg_paths = list_transform(getvariable('kineto_piece_arg_keys'),
    lambda k: '/' || replace(replace(k, '~', '~0'), '/', '~1'));
-- The values of every key of the relation's args, in the order of kineto_piece_arg_keys.
CREATE OR REPLACE TEMP MACRO _kineto_args(j) AS json_extract(j, getvariable('kineto_piece_arg_paths'));
-- One arg of an event by name (NULL when absent; the JSON `null` when written as null).
CREATE OR REPLACE TEMP MACRO _kineto_arg(vals, key) AS vals[list_position(getvariable('kineto_piece_arg_keys'), key)];
-- The args an event has, as (key, value) structs.
CREATE OR REPLACE TEMP MACRO _kineto_arg_entries(vals) AS
    list_filter(list_zip(getvariable('kineto_piece_arg_keys'), vals), lambda kv: kv[2] IS NOT NULL);
-- Whether an args object repeats a key: more keys than distinct values found.
CREATE OR REPLACE TEMP MACRO _kineto_repeats_keys(j, vals) AS
    len(json_keys(j)) > len(list_filter(vals, lambda v: v IS NOT NULL));

-- A text that is exactly the decimal of a BIGINT (no '+', leading zero, space or '.0', which a
-- cast takes too): that BIGINT, else NULL. Most integers of a trace are written so: this cast
-- decides them, the JSON parse and regexes below only the rest.
CREATE OR REPLACE TEMP MACRO _kineto_plain_int(v) AS CASE WHEN CAST(TRY_CAST(v AS BIGINT) AS VARCHAR) = v THEN TRY_CAST(v AS BIGINT) END;
CREATE OR REPLACE TEMP MACRO _kineto_int(j) AS coalesce(_kineto_plain_int(CAST(j AS VARCHAR)), CASE json_type(j)
    WHEN 'BIGINT' THEN TRY_CAST(j AS BIGINT)
    WHEN 'UBIGINT' THEN TRY_CAST(j AS BIGINT)
    WHEN 'DOUBLE' THEN CASE WHEN TRY_CAST(j AS DOUBLE) = floor(TRY_CAST(j AS DOUBLE)) THEN TRY_CAST(TRY_CAST(j AS DOUBLE) AS BIGINT) END
    WHEN 'VARCHAR' THEN CASE WHEN regexp_full_match(j ->> '$', '-?[0-9]+') THEN TRY_CAST(j ->> '$' AS BIGINT) END
END);
-- Integer of a text field (pid, tid, id: JSON numbers or digit strings, as their text).
CREATE OR REPLACE TEMP MACRO _kineto_int_text(v) AS coalesce(_kineto_plain_int(v), CASE
    WHEN regexp_full_match(v, '-?[0-9]+') THEN TRY_CAST(v AS BIGINT)
    WHEN regexp_full_match(v, '-?[0-9]+\.0*') THEN TRY_CAST(split_part(v, '.', 1) AS BIGINT) END);
-- A counter sample that is not a finite number (NaN, Infinity, 1e999) is left out, as one that is no number.
CREATE OR REPLACE TEMP MACRO _kineto_float(j) AS CASE WHEN json_type(j) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND isfinite(TRY_CAST(j AS DOUBLE)) THEN TRY_CAST(j AS DOUBLE) END;
CREATE OR REPLACE TEMP MACRO _kineto_str(j) AS CASE WHEN json_type(j) = 'VARCHAR' THEN j ->> '$' END;
CREATE OR REPLACE TEMP MACRO _kineto_ns(us) AS CAST(round(us * 1000) AS BIGINT);
CREATE OR REPLACE TEMP MACRO _kineto_dim(j, i) AS CASE
    WHEN json_type(j) = 'ARRAY' AND json_array_length(j) = 3
         AND json_type(j, '$[0]') IN ('BIGINT', 'UBIGINT') AND json_type(j, '$[1]') IN ('BIGINT', 'UBIGINT')
         AND json_type(j, '$[2]') IN ('BIGINT', 'UBIGINT')
    THEN TRY_CAST(j -> ('$[' || i || ']') AS INTEGER) END;

-- Grid or block: [x, y, z] as INTEGERs (each NULL past INTEGER), or three NULLs unless an array of
-- three JSON integers. Written compactly by json_extract, three integers of up to 18 digits (all
-- within BIGINT) are one regex on the text; anything else takes _kineto_dim.
CREATE OR REPLACE TEMP MACRO _kineto_dims(j) AS CASE
    WHEN regexp_full_match(CAST(j AS VARCHAR), '\[-?[0-9]{1,18},-?[0-9]{1,18},-?[0-9]{1,18}\]')
    THEN list_transform(string_split(substr(CAST(j AS VARCHAR), 2, length(CAST(j AS VARCHAR)) - 2), ','), lambda d: TRY_CAST(d AS INTEGER))
    ELSE [_kineto_dim(j, 0), _kineto_dim(j, 1), _kineto_dim(j, 2)] END;

-- Complete events that become spans, with everything the mapper derives from them.
CREATE OR REPLACE TEMP TABLE _kineto_complete AS
WITH
    categories AS (
        SELECT unnest(getvariable('kineto_category_names')) AS lower_cat, unnest(getvariable('kineto_category_kinds')) AS kind
    ),
    complete AS (
        SELECT e.rowid AS event_index, e.*,
               coalesce(lower(e.cat), '') AS lower_cat, _kineto_args(e.args) AS a
        FROM _kineto_events AS e
        WHERE e.ph = getvariable('kineto_phase_complete')
    ),
    classified AS (
        SELECT c.*, coalesce(k.kind, 'other') AS kind0,
               coalesce(k.kind, 'other') IN (SELECT unnest(getvariable('kineto_gpu_kinds')))
                   OR list_contains(getvariable('kineto_gpu_annotation_categories'), c.lower_cat) AS on_gpu,
               _kineto_int_text(c.pid) AS track_pid, _kineto_int_text(c.tid) AS track_tid,
               coalesce(c.name, c.cat, 'None') AS span_name
        FROM complete AS c LEFT JOIN categories AS k ON k.lower_cat = c.lower_cat
        WHERE NOT list_contains(getvariable('kineto_dropped_categories'), c.lower_cat)
          AND (getvariable('kineto_include_python') OR NOT list_contains(getvariable('kineto_python_categories'), c.lower_cat))
    ),
    kept AS (
        -- A CPU event needs an integer pid and tid (its track); GPU events have device and stream.
        SELECT *, on_gpu OR (track_pid IS NOT NULL AND track_tid IS NOT NULL) AS kept FROM classified
    )
SELECT
    CAST(NULL AS BIGINT) AS span_id,  -- numbered below, once the events not kept are gone
    kept, coalesce(_kineto_repeats_keys(args, a), false) AS repeats_keys,
    event_index, lower_cat, a, on_gpu, track_pid, track_tid, span_name AS name,
    -- A ProfilerStep#N recorded as an operator (2021 `Operator`, `cpu_op`) is the profiler's range: an annotation.
    CASE WHEN NOT on_gpu AND (list_contains(getvariable('kineto_user_annotation_categories'), lower_cat)
                              OR (list_contains(getvariable('kineto_step_op_categories'), lower_cat)
                                  AND starts_with(span_name, getvariable('kineto_step_prefix'))))
         THEN xsp_range_kind(span_name) ELSE kind0 END AS kind,
    CASE WHEN NOT on_gpu AND list_contains(getvariable('kineto_user_annotation_categories'), lower_cat)
         THEN xsp_layer_index(span_name) END AS layer_index,
    cat AS category,
    _kineto_ns(ts) AS start_ns,
    CASE WHEN dur > 0 THEN _kineto_ns(ts + dur) ELSE _kineto_ns(ts) END AS end_ns,
    CASE WHEN on_gpu THEN coalesce(_kineto_int(_kineto_arg(a, getvariable('kineto_arg_device'))), track_pid) END AS device_id,
    CASE WHEN on_gpu THEN
        CASE WHEN (_kineto_arg(a, getvariable('kineto_arg_stream')) IS NOT NULL)
             THEN _kineto_int(_kineto_arg(a, getvariable('kineto_arg_stream'))) ELSE track_tid END END AS raw_stream,
    CASE WHEN on_gpu OR kind0 = 'api' THEN _kineto_int(_kineto_arg(a, getvariable('kineto_arg_correlation'))) END AS correlation_id,
    nullif(_kineto_int(CASE WHEN (_kineto_arg(a, getvariable('kineto_arg_external_id')) IS NOT NULL)
                            THEN _kineto_arg(a, getvariable('kineto_arg_external_id'))
                            ELSE _kineto_arg(a, getvariable('kineto_arg_external_id_old')) END), 0) AS external_id
FROM kept;

CREATE OR REPLACE TEMP TABLE _kineto_skipped AS
SELECT count(*) FILTER (WHERE NOT kept) AS cpu_events_off_track,
       count(*) FILTER (WHERE repeats_keys)
       + (SELECT count(*) FROM _kineto_events
          WHERE ph IS DISTINCT FROM getvariable('kineto_phase_complete') AND args IS NOT NULL
            AND _kineto_repeats_keys(args, _kineto_args(args))) AS events_repeating_arg_keys
FROM _kineto_complete;
DELETE FROM _kineto_complete WHERE NOT kept;
-- Span ids in event order over all pieces (1..n). Numbered on the narrow (event_index) rows and
-- written back: a window over the wide rows sorted them all.
UPDATE _kineto_complete SET span_id = n.span_id
FROM (SELECT event_index, row_number() OVER (ORDER BY event_index) + getvariable('kineto_span_offset') AS span_id FROM _kineto_complete) AS n
WHERE _kineto_complete.event_index = n.event_index;

INSERT INTO _kineto_spans BY NAME
SELECT
    -- Span id in event order (over all pieces).
    span_id,
    -- Kind from the category; user annotations classified by name.
    kind,
    -- Event name.
    name,
    -- Category as written.
    category,
    -- Start and end, integer ns.
    start_ns, end_ns,
    -- CPU process and thread (NULL on the GPU: kineto_link assigns the launching process).
    CASE WHEN on_gpu THEN NULL ELSE track_pid END AS pid,
    CASE WHEN on_gpu THEN NULL ELSE track_tid END AS tid,
    -- GPU device, stream (none for device-wide activities), launch correlation id.
    device_id,
    CASE WHEN NOT list_contains(getvariable('kineto_no_stream_values'), raw_stream) THEN raw_stream END AS stream_id,
    CASE WHEN on_gpu OR kind = 'api' THEN correlation_id END AS correlation_id,
    -- Layer index, External id, raw track (iterations: correlate/step_ranges, for every format).
    layer_index, external_id, track_pid, track_tid
FROM _kineto_complete
ORDER BY span_id;

INSERT INTO kernels BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, span_id,
    -- Launch configuration: grid and block as [x, y, z] of integers.
    grid[1] AS grid_x, grid[2] AS grid_y, grid[3] AS grid_z, block[1] AS block_x, block[2] AS block_y, block[3] AS block_z,
    -- Registers, shared memory per block, occupancy (a fraction), blocks and warps per SM.
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_registers'))) AS registers_per_thread,
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_shared_memory'))) AS shared_mem_bytes,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_occupancy_percent'))) / 100.0 AS occupancy_estimate,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_blocks_per_sm'))) AS blocks_per_sm,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_warps_per_sm'))) AS warps_per_sm
FROM (SELECT *, _kineto_dims(_kineto_arg(a, getvariable('kineto_arg_grid'))) AS grid,
             _kineto_dims(_kineto_arg(a, getvariable('kineto_arg_block'))) AS block
      FROM _kineto_complete WHERE kind = 'kernel')
ORDER BY span_id;

INSERT INTO memops BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, span_id, kind,
    -- GPU duration, a copy of the span's.
    end_ns - start_ns AS duration_ns,
    -- Copy kind and endpoints from the name ("Memcpy HtoD (Pageable -> Device)"), else args.kind.
    CASE WHEN kind = 'memcpy' THEN coalesce(nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 1), ''),
                                            CASE WHEN NOT regexp_matches(name, getvariable('kineto_memcpy_pattern'))
                                                 THEN _kineto_str(_kineto_arg(a, getvariable('kineto_arg_memcpy_kind'))) END) END AS copy_kind,
    -- Bytes moved or set.
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_bytes'))) AS bytes,
    CASE WHEN kind = 'memcpy' THEN nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 2), '') END AS src_kind,
    -- A set's memory kind from its name ("Memset (Device)"), as nsys keeps it in dst_kind.
    CASE WHEN kind = 'memcpy' THEN nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 3), '')
         WHEN kind = 'memset' THEN nullif(regexp_extract(name, getvariable('kineto_memset_pattern'), 1), '') END AS dst_kind
FROM _kineto_complete WHERE kind IN ('memcpy', 'memset')
ORDER BY span_id;

INSERT INTO _kineto_launch_config BY NAME
SELECT
    -- Launch API call (ROCm writes the configuration there).
    correlation_id, track_pid AS pid,
    grid[1] AS grid_x, grid[2] AS grid_y, grid[3] AS grid_z, block[1] AS block_x, block[2] AS block_y, block[3] AS block_z,
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_shared_memory'))) AS shared_mem_bytes
FROM (SELECT *, _kineto_dims(_kineto_arg(a, getvariable('kineto_arg_grid'))) AS grid,
             _kineto_dims(_kineto_arg(a, getvariable('kineto_arg_block'))) AS block
      FROM _kineto_complete
      WHERE kind = 'api' AND correlation_id IS NOT NULL AND (_kineto_arg(a, getvariable('kineto_arg_grid')) IS NOT NULL))
ORDER BY span_id;

INSERT INTO span_args BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, span_id,
    -- Arg name as written.
    key,
    -- Strings as they are, booleans true/false, numbers and lists/objects as (compact) JSON text.
    -- A string without a backslash is the text between its quotes (no JSON parse).
    CASE WHEN NOT starts_with(value, '"') THEN CAST(value AS VARCHAR)
         WHEN contains(value, '\') THEN value ->> '$'
         ELSE substr(value, 2, length(value) - 2) END AS value
FROM (
    SELECT span_id, on_gpu, kind, kv[1] AS key, kv[2] AS value
    FROM (SELECT span_id, on_gpu, kind, unnest(_kineto_arg_entries(a)) AS kv FROM _kineto_complete WHERE a IS NOT NULL)
)
-- json_extract writes values as compact JSON text (a string starts with its quote, null is
-- `null`): text tests, not a parse of every value.
WHERE value IS NOT NULL AND value <> 'null' AND value <> '""'
  AND NOT list_contains(getvariable('kineto_dropped_args'), key)
  AND NOT (on_gpu AND list_contains(getvariable('kineto_typed_args'), key))
  -- Graph and node ids of 0: the activity was launched outside a graph (Kineto writes them anyway).
  AND NOT (on_gpu AND list_contains(getvariable('kineto_graph_args'), key)
           AND coalesce(_kineto_int(value) = getvariable('kineto_not_in_graph'), false))
  AND NOT (NOT on_gpu AND kind = 'api' AND key = getvariable('kineto_arg_correlation'));

INSERT INTO _kineto_flows BY NAME
SELECT
    -- 's' on the CPU launch, 'f' on the GPU activity; the flow id is the correlation id.
    ph AS phase, _kineto_int_text(id) AS flow_id, _kineto_int_text(pid) AS pid, _kineto_int_text(tid) AS tid, _kineto_ns(ts) AS ts_ns
FROM _kineto_events
WHERE list_contains(getvariable('kineto_phase_flows'), ph)
  AND list_contains(getvariable('kineto_flow_categories'), lower(cat))
  AND _kineto_int_text(id) IS NOT NULL AND _kineto_int_text(pid) IS NOT NULL AND _kineto_int_text(tid) IS NOT NULL
  AND abs(ts) <= getvariable('kineto_time_limit_us')
ORDER BY rowid;

INSERT INTO counters BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Memory instants: one sample per accounting arg (Total Allocated, Total Reserved).
    k.key AS name, _kineto_ns(e.ts) AS ts_ns, _kineto_float(_kineto_arg(e.a, k.key)) AS value, _kineto_int_text(e.pid) AS pid,
    -- GPU memory: the device; host memory: NULL.
    CASE WHEN list_contains(getvariable('kineto_memory_gpu_types'), _kineto_int(_kineto_arg(e.a, getvariable('kineto_memory_device_type_arg'))))
         THEN _kineto_int(_kineto_arg(e.a, getvariable('kineto_memory_device_id_arg'))) END AS device_id
FROM (SELECT ts, pid, _kineto_args(args) AS a FROM _kineto_events
      WHERE list_contains(getvariable('kineto_phase_instant'), ph) AND name = getvariable('kineto_memory_instant')) AS e,
     (SELECT unnest(getvariable('kineto_memory_counter_args')) AS key) AS k
WHERE _kineto_float(_kineto_arg(e.a, k.key)) IS NOT NULL;

INSERT INTO marks BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Other instant events: time, name, category, process and thread.
    _kineto_ns(ts) AS ts_ns, name, cat AS category,
    _kineto_int_text(pid) AS pid, _kineto_int_text(tid) AS tid
FROM _kineto_events
WHERE list_contains(getvariable('kineto_phase_instant'), ph) AND coalesce(name, '') <> getvariable('kineto_memory_instant')
ORDER BY rowid;

INSERT INTO counters BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Counter events: the name, or name.arg when the event has several args.
    CASE WHEN len(e.entries) = 1 THEN coalesce(e.name, 'None') ELSE coalesce(e.name, 'None') || '.' || e.kv[1] END AS name,
    _kineto_ns(e.ts) AS ts_ns, _kineto_float(e.kv[2]) AS value, _kineto_int_text(e.pid) AS pid, NULL AS device_id
FROM (SELECT *, unnest(entries) AS kv
      FROM (SELECT name, ts, pid, _kineto_arg_entries(_kineto_args(args)) AS entries
            FROM _kineto_events WHERE ph = getvariable('kineto_phase_counter'))) AS e
WHERE _kineto_float(e.kv[2]) IS NOT NULL;

-- Metadata events naming processes and threads (kineto_link.sql keeps the last of each, as the
-- trace viewer does).
INSERT INTO _kineto_name_events BY NAME
SELECT name AS what, _kineto_int_text(pid) AS pid,
       CASE WHEN name = 'thread_name' THEN _kineto_int_text(tid) END AS tid,
       CASE WHEN name = 'process_labels' THEN _kineto_str(_kineto_arg(a, 'labels'))
            WHEN name = 'thread_name' THEN trim(_kineto_str(_kineto_arg(a, 'name')), ' ')
            ELSE _kineto_str(_kineto_arg(a, 'name')) END AS value,
       event_index
FROM (SELECT name, pid, tid, _kineto_args(args) AS a, rowid + getvariable('kineto_event_offset') AS event_index
      FROM _kineto_events WHERE ph = getvariable('kineto_phase_metadata'))
WHERE _kineto_int_text(pid) IS NOT NULL
  AND (  (name = 'process_name' AND _kineto_str(_kineto_arg(a, 'name')) IS NOT NULL)
      OR (name = 'process_labels' AND _kineto_str(_kineto_arg(a, 'labels')) IS NOT NULL)
      OR (name = 'thread_name' AND _kineto_int_text(tid) IS NOT NULL AND _kineto_str(_kineto_arg(a, 'name')) IS NOT NULL));

DROP TABLE _kineto_complete;
