-- lib/sync: the CPU-time taxonomy of CUDA / HIP API calls -- which calls launch GPU work, which
-- wait for the GPU (synchronise) -- and the framework op a call comes from.
-- include:
--
-- From: spans (kind 'api' and the ops enclosing them), launches, memops, span_ancestors; the
-- API-name patterns and memory kinds are variables set from xsp_trace/formats/cuda_api.py, the
-- macro xsp_normalized_name(name) comes from xsp_trace/naming.py.
-- What a CPU thread was waiting for at each instant: 'launch' (inside a call that launched GPU work
-- and returned without waiting), 'sync' (inside a call that blocks: explicit or implicit
-- synchronisation, an async copy to or from pageable memory), 'host' (inside any other recorded
-- span: framework ops, Python, data loading, other API calls), 'idle' (inside no span).

-- By name alone: 'explicit' for calls that wait for the GPU (cudaDeviceSynchronize,
-- cudaStreamSynchronize, ...), 'implicit' for calls that wait as a side effect (cudaMemcpy, cudaFree,
-- ...), NULL otherwise. Async copies that block (pageable memory) need the copy: xsp_cpu_calls.
CREATE OR REPLACE TEMP MACRO xsp_sync_call_kind(kind, name) AS
    CASE
        WHEN kind <> 'api' THEN NULL
        WHEN regexp_matches(name, getvariable('xsp_explicit_sync_api')) THEN 'explicit'
        WHEN regexp_matches(name, getvariable('xsp_implicit_sync_api')) THEN 'implicit'
    END;

-- Every CUDA / HIP API call with its class. The pageable endpoint comes from the copy it launched
-- (memops.src_kind / dst_kind in the variable xsp_pageable_kinds).
CREATE OR REPLACE TEMP VIEW xsp_cpu_calls AS
WITH launched AS (
    SELECT l.run_id, l.api_span_id,
           bool_or(list_contains(getvariable('xsp_pageable_kinds'), m.src_kind)
                   OR list_contains(getvariable('xsp_pageable_kinds'), m.dst_kind)) AS pageable,
           any_value(m.copy_kind) FILTER (WHERE m.copy_kind IS NOT NULL) AS copy_kind,
           any_value(m.src_kind || ' -> ' || m.dst_kind) FILTER (WHERE m.src_kind IS NOT NULL) AS copy_endpoints,
           sum(m.bytes) AS bytes
    FROM launches AS l
    LEFT JOIN memops AS m ON m.run_id = l.run_id AND m.span_id = l.gpu_span_id
    GROUP BY l.run_id, l.api_span_id
), classified AS (
    SELECT s.run_id, s.span_id, s.pid, s.tid, s.name, s.start_ns, s.end_ns,
           CASE WHEN regexp_matches(s.name, getvariable('xsp_explicit_sync_api')) THEN 'explicit'
                WHEN regexp_matches(s.name, getvariable('xsp_implicit_sync_api')) THEN 'implicit'
                WHEN coalesce(la.pageable, FALSE) AND regexp_matches(s.name, getvariable('xsp_async_copy_api')) THEN 'pageable copy'
           END AS wait_kind,
           la.api_span_id IS NOT NULL AS launched_work, la.copy_kind, la.copy_endpoints, la.bytes
    FROM spans AS s
    LEFT JOIN launched AS la ON la.run_id = s.run_id AND la.api_span_id = s.span_id
    WHERE s.kind = 'api'
)
SELECT
    -- Run.
    run_id,
    -- The API call's span.
    span_id,
    -- Process.
    pid,
    -- Thread.
    tid,
    -- API name.
    name,
    -- Start, ns on the run clock.
    start_ns,
    -- End, ns.
    end_ns,
    -- 'sync' (it waited for the GPU), 'launch' (it launched GPU work without waiting) or 'host'.
    CASE WHEN wait_kind IS NOT NULL THEN 'sync' WHEN launched_work THEN 'launch' ELSE 'host' END AS cpu_class,
    -- How it waited: 'explicit', 'implicit', 'pageable copy' (NULL: it did not).
    wait_kind,
    -- Direction of the copy it launched, if any.
    copy_kind,
    -- Memory kinds of that copy, 'src -> dst'.
    copy_endpoints,
    -- Bytes it copied or set.
    bytes
FROM classified;

-- The framework op a call comes from: the outermost op (kind 'op') enclosing it, e.g. aten::to
-- for the cudaMemcpyAsync under aten::to > aten::_to_copy > aten::copy_ (NULL: none recorded),
-- without per-instance suffixes (", op_id = 12": xsp_normalized_name from xsp_trace/naming.py).
CREATE OR REPLACE TEMP MACRO xsp_call_origin(call_run_id, call_span_id) AS (
    SELECT xsp_normalized_name(arg_max(o.name, a.distance))
    FROM span_ancestors AS a JOIN spans AS o ON o.run_id = a.run_id AND o.span_id = a.ancestor_id
    WHERE a.run_id = call_run_id AND a.span_id = call_span_id AND o.kind = 'op'
);
