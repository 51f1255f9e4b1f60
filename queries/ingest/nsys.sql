-- ingest/nsys: one Nsight Systems export as a run of the unified schema.
--
-- From: the `_nsys_*` staging tables that xsp_trace.convert.nsys projects out of the SQLite
-- export (one row per export row; pid/tid already decoded from globalTid/globalPid, strings as
-- ids into _nsys_strings, span ids assigned), and variables named after the export's codes
-- (getvariable('nsys_...'), set from xsp_trace.formats.nsys_export).
-- Computes: spans (NVTX ranges, CUDA API calls, kernels, memcpy, memset, sync), kernels,
-- memops, marks, devices, processes and threads of run getvariable('xsp_run_id').
-- NVTX names follow nsys stats: the text of textId wins over inline text; a range never closed
-- ends at the last NVTX timestamp of the export; domains are resolved per process.

CREATE OR REPLACE TEMP TABLE _nsys_domains AS
SELECT pid, domain_id, arg_min(text, start_ns) AS name
FROM _nsys_nvtx
WHERE event_type = getvariable('nsys_nvtx_domain_create')
GROUP BY pid, domain_id;

-- NVTX events with their names and domains, read once by each statement below (a view: the
-- 4.9 M NVTX rows of a large export are not copied into another table first).
CREATE OR REPLACE TEMP VIEW _nsys_nvtx_named AS
SELECT n.*, coalesce(s.value, n.text, '(unnamed)') AS name, d.name AS domain
FROM _nsys_nvtx AS n
LEFT JOIN _nsys_strings AS s ON s.id = n.text_id
LEFT JOIN _nsys_domains AS d ON d.pid = n.pid AND d.domain_id = n.domain_id;

-- NVTX push/pop and start/end ranges: model, layer, op or annotation by their names.
-- range_style: how each range was made (push/pop nests per thread; start/end may cross threads).
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, tid, end_tid, layer_index, range_style)
SELECT
    getvariable('xsp_run_id'),
    span_id,
    xsp_range_kind(name),
    name,
    domain,
    start_ns,
    coalesce(end_ns, getvariable('nsys_nvtx_max_ts')),
    pid,
    tid,
    CASE WHEN end_tid IS NOT NULL AND end_tid <> tid THEN end_tid END,
    xsp_layer_index(name),
    CASE WHEN list_contains(getvariable('nsys_nvtx_pushpop_types'), event_type) THEN 'push_pop' ELSE 'start_end' END
FROM _nsys_nvtx_named
WHERE list_contains(getvariable('nsys_nvtx_range_types'), event_type);

INSERT INTO marks (run_id, ts_ns, name, category, pid, tid)
SELECT getvariable('xsp_run_id'), start_ns, name, domain, pid, tid
FROM _nsys_nvtx_named
WHERE list_contains(getvariable('nsys_nvtx_mark_types'), event_type);

-- CUDA runtime and driver API calls.
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, tid, correlation_id)
SELECT
    getvariable('xsp_run_id'),
    a.span_id,
    'api',
    regexp_replace(coalesce(s.value, '(unknown API)'), getvariable('nsys_api_version_suffix'), ''),
    CASE a.event_class
        WHEN getvariable('nsys_api_class_runtime') THEN 'cuda_runtime'
        WHEN getvariable('nsys_api_class_driver') THEN 'cuda_driver'
    END,
    a.start_ns, a.end_ns, a.pid, a.tid, a.correlation_id
FROM _nsys_api AS a
LEFT JOIN _nsys_strings AS s ON s.id = a.name_id;

-- OS runtime library calls (read, sem_wait, pthread_create...): CPU spans of kind 'other'.
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, tid)
SELECT
    getvariable('xsp_run_id'), o.span_id, 'other', coalesce(s.value, '(unknown function)'),
    getvariable('nsys_osrt_category'), o.start_ns, o.end_ns, o.pid, o.tid
FROM _nsys_osrt AS o
LEFT JOIN _nsys_strings AS s ON s.id = o.name_id;

-- Kernels: the span, then their launch configuration.
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, device_id, stream_id, correlation_id)
SELECT
    getvariable('xsp_run_id'), k.span_id, 'kernel', coalesce(s.value, '(unknown kernel)'), 'kernel',
    k.start_ns, k.end_ns, k.pid, k.device_id, k.stream_id, k.correlation_id
FROM _nsys_kernel AS k
LEFT JOIN _nsys_strings AS s ON s.id = k.name_id;

INSERT INTO kernels (run_id, span_id, short_name, mangled_name, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                     registers_per_thread, shared_mem_static_bytes, shared_mem_dynamic_bytes, local_mem_per_thread_bytes)
SELECT
    getvariable('xsp_run_id'), k.span_id, short.value, mangled.value, k.grid_x, k.grid_y, k.grid_z,
    k.block_x, k.block_y, k.block_z, k.registers_per_thread, k.shared_mem_static_bytes,
    k.shared_mem_dynamic_bytes, k.local_mem_per_thread_bytes
FROM _nsys_kernel AS k
LEFT JOIN _nsys_strings AS short ON short.id = k.short_id
LEFT JOIN _nsys_strings AS mangled ON mangled.id = k.mangled_id;

-- Memory copies and sets.
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, device_id, stream_id, correlation_id)
SELECT
    getvariable('xsp_run_id'), m.span_id, 'memcpy',
    printf(getvariable('nsys_memcpy_name'), coalesce(e.label, 'Unknown')), 'memcpy',
    m.start_ns, m.end_ns, m.pid, m.device_id, m.stream_id, m.correlation_id
FROM _nsys_memcpy AS m
LEFT JOIN _nsys_enums AS e ON e.enum = 'memcpy_kind' AND e.code = m.copy_kind;

INSERT INTO memops (run_id, span_id, kind, copy_kind, bytes, duration_ns, src_kind, dst_kind)
SELECT getvariable('xsp_run_id'), m.span_id, 'memcpy', e.short, m.bytes, m.end_ns - m.start_ns, src.label, dst.label
FROM _nsys_memcpy AS m
LEFT JOIN _nsys_enums AS e ON e.enum = 'memcpy_kind' AND e.code = m.copy_kind
LEFT JOIN _nsys_enums AS src ON src.enum = 'mem_kind' AND src.code = m.src_kind
LEFT JOIN _nsys_enums AS dst ON dst.enum = 'mem_kind' AND dst.code = m.dst_kind;

INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, device_id, stream_id, correlation_id)
SELECT
    getvariable('xsp_run_id'), m.span_id, 'memset', getvariable('nsys_memset_name'), 'memset',
    m.start_ns, m.end_ns, m.pid, m.device_id, m.stream_id, m.correlation_id
FROM _nsys_memset AS m;

INSERT INTO memops (run_id, span_id, kind, bytes, duration_ns, dst_kind, fill_value)
SELECT getvariable('xsp_run_id'), m.span_id, 'memset', m.bytes, m.end_ns - m.start_ns, kind.label, m.fill_value
FROM _nsys_memset AS m
LEFT JOIN _nsys_enums AS kind ON kind.enum = 'mem_kind' AND kind.code = m.mem_kind;

-- Graph and graph node ids of GPU activities replayed by a CUDA graph launch (node-level graph
-- tracing). Their correlation id is the graph launch's, so they link to that call like any launch.
INSERT INTO span_args (run_id, span_id, key, value)
SELECT getvariable('xsp_run_id'), g.span_id, g.key, CAST(g.value AS VARCHAR)
FROM (
    SELECT span_id, getvariable('nsys_graph_id_arg') AS key, graph_id AS value FROM _nsys_kernel
    UNION ALL SELECT span_id, getvariable('nsys_graph_node_id_arg'), graph_node_id FROM _nsys_kernel
    UNION ALL SELECT span_id, getvariable('nsys_graph_id_arg'), graph_id FROM _nsys_memcpy
    UNION ALL SELECT span_id, getvariable('nsys_graph_node_id_arg'), graph_node_id FROM _nsys_memcpy
    UNION ALL SELECT span_id, getvariable('nsys_graph_id_arg'), graph_id FROM _nsys_memset
    UNION ALL SELECT span_id, getvariable('nsys_graph_node_id_arg'), graph_node_id FROM _nsys_memset
) AS g
WHERE g.value IS NOT NULL AND g.value <> getvariable('nsys_not_in_graph')
ORDER BY g.span_id, g.key;

-- Synchronizations (cudaStreamSynchronize, cudaEventSynchronize, ...), on the stream they waited for.
INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, device_id, stream_id, correlation_id)
SELECT
    getvariable('xsp_run_id'), y.span_id, 'sync', coalesce(e.label, 'Synchronization'), 'sync',
    y.start_ns, y.end_ns, y.pid, y.device_id, y.stream_id, y.correlation_id
FROM _nsys_sync AS y
LEFT JOIN _nsys_enums AS e ON e.enum = 'sync_type' AND e.code = y.sync_type;

-- Devices: the CUDA ordinal comes from TARGET_INFO_CUDA_DEVICE (gpuId -> cudaId) where present,
-- else TARGET_INFO_GPU.cuDevice; devices seen only in activities get a row without details.
CREATE OR REPLACE TEMP TABLE _nsys_device_rows AS
SELECT DISTINCT coalesce(c.cuda_id, g.cu_device, g.gpu_id) AS device_id, g.*
FROM _nsys_gpus AS g
LEFT JOIN _nsys_cuda_devices AS c ON c.gpu_id = g.gpu_id;

INSERT INTO devices (run_id, device_id, name, vendor, uuid, bus_location, sm_count, memory_bytes,
                     memory_bandwidth_bytes_per_s, clock_rate_hz, compute_major, compute_minor)
SELECT
    getvariable('xsp_run_id'), device_id, any_value(name), 'nvidia', any_value(uuid), any_value(bus_location),
    any_value(sm_count), any_value(memory_bytes), any_value(memory_bandwidth), any_value(clock_rate),
    any_value(compute_major), any_value(compute_minor)
FROM _nsys_device_rows
GROUP BY device_id;

INSERT INTO devices (run_id, device_id, vendor)
SELECT DISTINCT getvariable('xsp_run_id'), device_id, 'nvidia'
FROM spans
WHERE run_id = getvariable('xsp_run_id') AND device_id IS NOT NULL
  AND device_id NOT IN (SELECT device_id FROM _nsys_device_rows WHERE device_id IS NOT NULL);

-- Processes and threads that own spans, with their names.
INSERT INTO processes (run_id, pid, name)
SELECT getvariable('xsp_run_id'), owners.pid, (SELECT any_value(p.name) FROM _nsys_processes AS p WHERE p.pid = owners.pid)
FROM (SELECT DISTINCT pid FROM spans WHERE run_id = getvariable('xsp_run_id') AND pid IS NOT NULL) AS owners;

INSERT INTO threads (run_id, pid, tid, name)
SELECT getvariable('xsp_run_id'), owners.pid, owners.tid,
       (SELECT any_value(s.value) FROM _nsys_threads AS t JOIN _nsys_strings AS s ON s.id = t.name_id
        WHERE t.pid = owners.pid AND t.tid = owners.tid)
FROM (SELECT DISTINCT pid, tid FROM spans WHERE run_id = getvariable('xsp_run_id') AND tid IS NOT NULL) AS owners;

DROP TABLE _nsys_domains;
DROP VIEW _nsys_nvtx_named;
DROP TABLE _nsys_device_rows;
