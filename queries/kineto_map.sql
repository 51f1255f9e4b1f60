-- kineto_map: Kineto events (read by DuckDB's JSON reader) into the Kineto staging and side tables --
-- the same rows xsp_trace.convert.kineto.KinetoMapper builds in Python, for large traces.
--
-- From: the temp table _kineto_events (one row per element of traceEvents in file order, rowid =
-- position; ts/dur DECIMAL microseconds; cat, name, pid, tid, id, args as JSON) and variables
-- kineto_* holding the facts of xsp_trace.formats.kineto_fields (set by kineto_fast.py).
-- Writes: _kineto_spans, _kineto_flows, _kineto_launch_config (then queries/kineto_link.sql runs),
-- kernels, memops, span_args, marks, counters of run getvariable('xsp_run_id'), and _kineto_names
-- (process and thread names from metadata events).
-- Rules (as KinetoMapper): ns = round half away from zero of us * 1000, an end from ts + dur;
-- integers are JSON integers, integral decimals or digit strings; category matched lower-case.

CREATE OR REPLACE TEMP MACRO _kineto_int(j) AS CASE json_type(j)
    WHEN 'BIGINT' THEN TRY_CAST(j AS BIGINT)
    WHEN 'UBIGINT' THEN TRY_CAST(j AS BIGINT)
    WHEN 'DOUBLE' THEN CASE WHEN TRY_CAST(j AS DOUBLE) = floor(TRY_CAST(j AS DOUBLE)) THEN TRY_CAST(TRY_CAST(j AS DOUBLE) AS BIGINT) END
    WHEN 'VARCHAR' THEN CASE WHEN regexp_full_match(j ->> '$', '-*[0-9]+') THEN TRY_CAST(ltrim(j ->> '$', '-') AS BIGINT) * CASE WHEN starts_with(j ->> '$', '-') THEN -1 ELSE 1 END END
END;
-- One arg of an args object by its (literal) key; keys may hold spaces, dots and '%'.
CREATE OR REPLACE TEMP MACRO _kineto_arg(a, key) AS json_extract(a, '$."' || key || '"');
CREATE OR REPLACE TEMP MACRO _kineto_has(a, key) AS json_exists(a, '$."' || key || '"');
CREATE OR REPLACE TEMP MACRO _kineto_float(j) AS CASE WHEN json_type(j) IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(j AS DOUBLE) END;
CREATE OR REPLACE TEMP MACRO _kineto_str(j) AS CASE WHEN json_type(j) = 'VARCHAR' THEN j ->> '$' END;
-- Python's str() of a JSON scalar: strings as they are, other values as their JSON text.
CREATE OR REPLACE TEMP MACRO _kineto_text(j) AS CASE WHEN json_type(j) = 'VARCHAR' THEN j ->> '$' ELSE CAST(j AS VARCHAR) END;
CREATE OR REPLACE TEMP MACRO _kineto_ns(us) AS CAST(round(us * 1000) AS BIGINT);
CREATE OR REPLACE TEMP MACRO _kineto_dim(j, i) AS CASE
    WHEN json_type(j) = 'ARRAY' AND json_array_length(j) = 3
         AND json_type(j, '$[0]') IN ('BIGINT', 'UBIGINT') AND json_type(j, '$[1]') IN ('BIGINT', 'UBIGINT')
         AND json_type(j, '$[2]') IN ('BIGINT', 'UBIGINT')
    THEN TRY_CAST(j -> ('$[' || i || ']') AS INTEGER) END;

-- Complete events that become spans, with everything the mapper derives from them.
CREATE OR REPLACE TEMP TABLE _kineto_complete AS
WITH
    categories AS (
        SELECT unnest(getvariable('kineto_category_names')) AS lower_cat, unnest(getvariable('kineto_category_kinds')) AS kind
    ),
    complete AS (
        SELECT e.rowid AS event_index, e.*,
               coalesce(lower(_kineto_str(e.cat)), '') AS lower_cat,
               CASE WHEN json_type(e.args) = 'OBJECT' THEN e.args END AS a
        FROM _kineto_events AS e
        WHERE e.ph = getvariable('kineto_phase_complete')
    ),
    classified AS (
        SELECT c.*, coalesce(k.kind, 'other') AS kind0,
               coalesce(k.kind, 'other') IN (SELECT unnest(getvariable('kineto_gpu_kinds')))
                   OR list_contains(getvariable('kineto_gpu_annotation_categories'), c.lower_cat) AS on_gpu,
               _kineto_int(c.pid) AS track_pid, _kineto_int(c.tid) AS track_tid,
               coalesce(_kineto_str(c.name), CASE WHEN c.name IS NOT NULL THEN _kineto_text(c.name) END,
                        CASE WHEN c.cat IS NOT NULL THEN _kineto_text(c.cat) ELSE 'None' END) AS span_name
        FROM complete AS c LEFT JOIN categories AS k ON k.lower_cat = c.lower_cat
        WHERE NOT list_contains(getvariable('kineto_dropped_categories'), c.lower_cat)
          AND (getvariable('kineto_include_python') OR NOT list_contains(getvariable('kineto_python_categories'), c.lower_cat))
    ),
    kept AS (
        SELECT * FROM classified WHERE on_gpu OR (track_pid IS NOT NULL AND track_tid IS NOT NULL)
    )
SELECT
    row_number() OVER (ORDER BY event_index) AS span_id,
    event_index, lower_cat, a, on_gpu, track_pid, track_tid, span_name AS name,
    CASE WHEN NOT on_gpu AND list_contains(getvariable('kineto_user_annotation_categories'), lower_cat)
         THEN xsp_range_kind(span_name) ELSE kind0 END AS kind,
    CASE WHEN NOT on_gpu AND list_contains(getvariable('kineto_user_annotation_categories'), lower_cat)
         THEN xsp_layer_index(span_name) END AS layer_index,
    _kineto_str(cat) AS category,
    _kineto_ns(ts) AS start_ns,
    CASE WHEN dur > 0 THEN _kineto_ns(ts + dur) ELSE _kineto_ns(ts) END AS end_ns,
    CASE WHEN on_gpu THEN coalesce(_kineto_int(_kineto_arg(a, getvariable('kineto_arg_device'))), track_pid) END AS device_id,
    CASE WHEN on_gpu THEN
        CASE WHEN _kineto_has(a, getvariable('kineto_arg_stream'))
             THEN _kineto_int(_kineto_arg(a, getvariable('kineto_arg_stream'))) ELSE track_tid END END AS raw_stream,
    CASE WHEN on_gpu OR kind0 = 'api' THEN _kineto_int(_kineto_arg(a, getvariable('kineto_arg_correlation'))) END AS correlation_id,
    nullif(_kineto_int(CASE WHEN _kineto_has(a, getvariable('kineto_arg_external_id'))
                            THEN _kineto_arg(a, getvariable('kineto_arg_external_id'))
                            ELSE _kineto_arg(a, getvariable('kineto_arg_external_id_old')) END), 0) AS external_id,
    CASE WHEN (list_contains(getvariable('kineto_user_annotation_categories'), lower_cat)
               OR list_contains(getvariable('kineto_gpu_annotation_categories'), lower_cat))
              AND starts_with(span_name, getvariable('kineto_step_prefix'))
         THEN _kineto_int(to_json(span_name[length(getvariable('kineto_step_prefix')) + 1:])) END AS iteration
FROM kept;

INSERT INTO _kineto_spans BY NAME
SELECT
    -- Span id in event order.
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
    -- ProfilerStep#N, layer index, External id, raw track.
    iteration, layer_index, external_id, track_pid, track_tid
FROM _kineto_complete
ORDER BY span_id;

INSERT INTO kernels BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, span_id,
    -- Launch configuration: grid and block as [x, y, z] of integers.
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 0) AS grid_x, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 1) AS grid_y,
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 2) AS grid_z, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 0) AS block_x,
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 1) AS block_y, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 2) AS block_z,
    -- Registers, shared memory per block, occupancy (a fraction), blocks and warps per SM.
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_registers'))) AS registers_per_thread,
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_shared_memory'))) AS shared_mem_bytes,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_occupancy_percent'))) / 100.0 AS occupancy_estimate,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_blocks_per_sm'))) AS blocks_per_sm,
    _kineto_float(_kineto_arg(a, getvariable('kineto_arg_warps_per_sm'))) AS warps_per_sm
FROM _kineto_complete WHERE kind = 'kernel'
ORDER BY span_id;

INSERT INTO memops BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, span_id,
    -- Copy kind and endpoints from the name ("Memcpy HtoD (Pageable -> Device)"), else args.kind.
    CASE WHEN kind = 'memcpy' THEN coalesce(nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 1), ''),
                                            CASE WHEN NOT regexp_matches(name, getvariable('kineto_memcpy_pattern'))
                                                 THEN _kineto_str(_kineto_arg(a, getvariable('kineto_arg_memcpy_kind'))) END) END AS copy_kind,
    -- Bytes moved or set.
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_bytes'))) AS bytes,
    CASE WHEN kind = 'memcpy' THEN nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 2), '') END AS src_kind,
    CASE WHEN kind = 'memcpy' THEN nullif(regexp_extract(name, getvariable('kineto_memcpy_pattern'), 3), '') END AS dst_kind
FROM _kineto_complete WHERE kind IN ('memcpy', 'memset')
ORDER BY span_id;

INSERT INTO _kineto_launch_config BY NAME
SELECT
    -- Launch API call (ROCm writes the configuration there).
    correlation_id, track_pid AS pid,
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 0) AS grid_x, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 1) AS grid_y,
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_grid')), 2) AS grid_z, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 0) AS block_x,
    _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 1) AS block_y, _kineto_dim(_kineto_arg(a, getvariable('kineto_arg_block')), 2) AS block_z,
    _kineto_int(_kineto_arg(a, getvariable('kineto_arg_shared_memory'))) AS shared_mem_bytes
FROM _kineto_complete
WHERE kind = 'api' AND correlation_id IS NOT NULL AND _kineto_has(a, getvariable('kineto_arg_grid'))
ORDER BY span_id;

INSERT INTO span_args BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id, c.span_id,
    -- Arg name as written.
    e.key,
    -- Strings as they are, booleans true/false, numbers and lists/objects as JSON text.
    CASE WHEN e.type = 'VARCHAR' THEN e.value ->> '$' ELSE CAST(e.value AS VARCHAR) END AS value
FROM _kineto_complete AS c, json_each(c.a) AS e
WHERE c.a IS NOT NULL
  AND e.type <> 'NULL' AND NOT (e.type = 'VARCHAR' AND e.value ->> '$' = '')
  AND NOT list_contains(getvariable('kineto_dropped_args'), e.key)
  AND NOT (c.on_gpu AND list_contains(getvariable('kineto_typed_args'), e.key))
  AND NOT (NOT c.on_gpu AND c.kind = 'api' AND e.key = getvariable('kineto_arg_correlation'));

INSERT INTO _kineto_flows BY NAME
SELECT
    -- 's' on the CPU launch, 'f' on the GPU activity; the flow id is the correlation id.
    ph AS phase, _kineto_int(id) AS flow_id, _kineto_int(pid) AS pid, _kineto_int(tid) AS tid, _kineto_ns(ts) AS ts_ns
FROM _kineto_events
WHERE list_contains(getvariable('kineto_phase_flows'), ph)
  AND list_contains(getvariable('kineto_flow_categories'), lower(_kineto_str(cat)))
  AND _kineto_int(id) IS NOT NULL AND _kineto_int(pid) IS NOT NULL AND _kineto_int(tid) IS NOT NULL AND ts IS NOT NULL
ORDER BY rowid;

INSERT INTO counters BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Memory instants: one sample per accounting arg (Total Allocated, Total Reserved).
    k.key AS name, _kineto_ns(e.ts) AS ts_ns, _kineto_float(_kineto_arg(e.args, k.key)) AS value, _kineto_int(e.pid) AS pid,
    -- GPU memory: the device; host memory: NULL.
    CASE WHEN list_contains(getvariable('kineto_memory_gpu_types'), _kineto_int(_kineto_arg(e.args, getvariable('kineto_memory_device_type_arg'))))
         THEN _kineto_int(_kineto_arg(e.args, getvariable('kineto_memory_device_id_arg'))) END AS device_id
FROM _kineto_events AS e, (SELECT unnest(getvariable('kineto_memory_counter_args')) AS key) AS k
WHERE list_contains(getvariable('kineto_phase_instant'), e.ph) AND _kineto_str(e.name) = getvariable('kineto_memory_instant')
  AND json_type(e.args) = 'OBJECT' AND _kineto_float(_kineto_arg(e.args, k.key)) IS NOT NULL;

INSERT INTO marks BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Other instant events: time, name, category, process and thread.
    _kineto_ns(ts) AS ts_ns, CASE WHEN name IS NOT NULL THEN _kineto_text(name) END AS name, _kineto_str(cat) AS category,
    _kineto_int(pid) AS pid, _kineto_int(tid) AS tid
FROM _kineto_events
WHERE list_contains(getvariable('kineto_phase_instant'), ph) AND coalesce(_kineto_str(name), '') <> getvariable('kineto_memory_instant')
ORDER BY rowid;

INSERT INTO counters BY NAME
SELECT
    getvariable('xsp_run_id') AS run_id,
    -- Counter events: the name, or name.arg when the event has several args.
    CASE WHEN json_array_length(json_keys(e.args)) = 1 THEN coalesce(_kineto_text(e.name), 'None')
         ELSE coalesce(_kineto_text(e.name), 'None') || '.' || k.key END AS name,
    _kineto_ns(e.ts) AS ts_ns, _kineto_float(k.value) AS value, _kineto_int(e.pid) AS pid, NULL AS device_id
FROM _kineto_events AS e, json_each(e.args) AS k
WHERE e.ph = getvariable('kineto_phase_counter') AND json_type(e.args) = 'OBJECT' AND _kineto_float(k.value) IS NOT NULL;

-- Names from metadata events (the last one wins, as in the trace viewer).
CREATE OR REPLACE TEMP TABLE _kineto_names AS
SELECT _kineto_str(name) AS what, _kineto_int(pid) AS pid,
       CASE WHEN _kineto_str(name) = 'thread_name' THEN _kineto_int(tid) END AS tid,
       arg_max(CASE WHEN _kineto_str(name) = 'process_labels' THEN _kineto_str(_kineto_arg(args, 'labels'))
                    WHEN _kineto_str(name) = 'thread_name' THEN trim(_kineto_str(_kineto_arg(args, 'name')), ' ')
                    ELSE _kineto_str(_kineto_arg(args, 'name')) END, rowid) AS value
FROM _kineto_events
WHERE ph = getvariable('kineto_phase_metadata') AND _kineto_int(pid) IS NOT NULL
  AND (  (_kineto_str(name) = 'process_name' AND _kineto_str(_kineto_arg(args, 'name')) IS NOT NULL)
      OR (_kineto_str(name) = 'process_labels' AND _kineto_str(_kineto_arg(args, 'labels')) IS NOT NULL)
      OR (_kineto_str(name) = 'thread_name' AND _kineto_int(tid) IS NOT NULL AND _kineto_str(_kineto_arg(args, 'name')) IS NOT NULL))
GROUP BY ALL;

DROP TABLE _kineto_complete;
