-- lib/collectives: every NCCL/RCCL collective kernel with its collective, message size, rank count
-- and nccl-tests' bus-bandwidth factor -- what analyses/nccl_collectives aggregates and lib/op_lists
-- charges to the op that launched it.
-- include: lib/gpu_work
--
-- From: communication kernels (xsp_gpu_work) and their span_args, else the args of the nearest
-- enclosing CPU range or op (record_param_comms, nccl:<collective>) of their launch
-- (span_ancestors). Collective: arg "Collective name", else the nearest enclosing nccl:<collective>
-- range of the launch, else the kernel name (ncclKernel_AllReduce_..);
-- message: the larger of "In msg nelems" / "Out msg nelems" (else the product of the first
-- "Input Dims") times the size of "dtype" (else the first "Input type"); ranks: "Group size" (the
-- process group's), else -- no process group recorded -- the job's world size (runs.world_size,
-- Kineto distributedInfo.world_size), which assumes the collective spans every rank.
-- Names, sizes and bus-bandwidth factors: xsp_trace/formats/collectives.py (session tables).

-- Every communication kernel with what its collective moves.
CREATE OR REPLACE TEMP VIEW xsp_collective_messages AS
WITH comm AS (
    SELECT run_id, span_id, name, end_ns - start_ns AS duration_ns
    FROM xsp_gpu_work WHERE work_class = 'communication'
), arg_keys AS (
    SELECT unnest([getvariable('xsp_arg_collective'), getvariable('xsp_arg_in_nelems'), getvariable('xsp_arg_out_nelems'),
                   getvariable('xsp_arg_dtype'), getvariable('xsp_arg_group_size'), getvariable('xsp_arg_input_dims'),
                   getvariable('xsp_arg_input_type')]) AS key
), own AS (
    SELECT c.run_id, c.span_id, a.key, a.value, 0 AS distance
    FROM comm AS c JOIN span_args AS a ON a.run_id = c.run_id AND a.span_id = c.span_id
    WHERE a.key IN (SELECT key FROM arg_keys)
), inherited AS (
    SELECT c.run_id, c.span_id, a.key, a.value, anc.distance
    FROM comm AS c
    JOIN span_ancestors AS anc ON anc.run_id = c.run_id AND anc.span_id = c.span_id
    JOIN span_args AS a ON a.run_id = anc.run_id AND a.span_id = anc.ancestor_id
    WHERE a.key IN (SELECT key FROM arg_keys)
), args AS (
    SELECT run_id, span_id, key, arg_min(value, distance) AS value
    FROM (SELECT * FROM own UNION ALL SELECT * FROM inherited)
    GROUP BY run_id, span_id, key
), ranged AS (
    SELECT c.run_id, c.span_id,
           arg_min(regexp_extract(r.name, getvariable('xsp_collective_from_range'), 1), anc.distance) AS collective_range
    FROM comm AS c
    JOIN span_ancestors AS anc ON anc.run_id = c.run_id AND anc.span_id = c.span_id
    JOIN spans AS r ON r.run_id = anc.run_id AND r.span_id = anc.ancestor_id
    WHERE regexp_matches(r.name, getvariable('xsp_collective_from_range'))
    GROUP BY c.run_id, c.span_id
), wide AS (
    SELECT c.run_id, c.span_id, c.name, c.duration_ns,
           coalesce(max(value) FILTER (WHERE key = getvariable('xsp_arg_collective')), any_value(rg.collective_range)) AS collective_arg,
           max(TRY_CAST(value AS BIGINT)) FILTER (WHERE key = getvariable('xsp_arg_in_nelems')) AS in_nelems,
           max(TRY_CAST(value AS BIGINT)) FILTER (WHERE key = getvariable('xsp_arg_out_nelems')) AS out_nelems,
           max(value) FILTER (WHERE key = getvariable('xsp_arg_dtype')) AS dtype,
           max(TRY_CAST(value AS INTEGER)) FILTER (WHERE key = getvariable('xsp_arg_group_size')) AS group_size,
           max(value) FILTER (WHERE key = getvariable('xsp_arg_input_dims')) AS input_dims,
           max(value) FILTER (WHERE key = getvariable('xsp_arg_input_type')) AS input_type
    FROM comm AS c
    LEFT JOIN args AS a ON a.run_id = c.run_id AND a.span_id = c.span_id
    LEFT JOIN ranged AS rg ON rg.run_id = c.run_id AND rg.span_id = c.span_id
    GROUP BY c.run_id, c.span_id, c.name, c.duration_ns
), sized AS (
    SELECT w.* REPLACE (coalesce(w.group_size, r.world_size) AS group_size),
           CASE WHEN w.group_size IS NOT NULL THEN 'process group' WHEN r.world_size IS NOT NULL THEN 'world size' END AS group_size_from,
           coalesce(cn.collective, kn.collective, 'unknown') AS collective,
           cn.busbw_scale IS NOT NULL OR kn.busbw_scale IS NOT NULL AS known,
           coalesce(cn.busbw_scale, kn.busbw_scale) AS busbw_scale,
           coalesce(cn.busbw_offset, kn.busbw_offset) AS busbw_offset,
           coalesce(greatest(w.in_nelems, w.out_nelems), w.in_nelems, w.out_nelems,
                    TRY_CAST(list_product(TRY_CAST(json_extract(w.input_dims, '$[0]') AS BIGINT[])) AS BIGINT))
               * db.bytes AS message_bytes
    FROM wide AS w
    LEFT JOIN runs AS r ON r.run_id = w.run_id
    LEFT JOIN xsp_collective_names AS cn ON cn.name_key = lower(regexp_replace(w.collective_arg, '[^A-Za-z]', '', 'g'))
    LEFT JOIN xsp_collective_names AS kn
        ON kn.name_key = lower(regexp_extract(w.name, getvariable('xsp_collective_from_kernel'), 1))
    LEFT JOIN xsp_dtype_bytes AS db
        ON db.dtype_key = lower(coalesce(w.dtype, json_extract_string(w.input_type, '$[0]')))
)
SELECT
    -- Run.
    run_id,
    -- The communication kernel.
    span_id,
    -- Its kernel time, ns.
    duration_ns,
    -- The collective as nccl-tests names it ('unknown' when neither args nor names say).
    collective,
    -- Message bytes (NULL where the trace gives no size or an unknown dtype).
    message_bytes,
    -- The element type as the trace names it ("dtype", else the first "Input type").
    coalesce(dtype, json_extract_string(input_type, '$[0]')) AS dtype,
    -- Ranks in the communicator (the process group's, else the job's world size).
    group_size,
    -- 'process group' or 'world size': where group_size comes from.
    group_size_from,
    -- nccl-tests' bus bandwidth / algorithm bandwidth for this collective and rank count (NULL
    -- when it needs the rank count and the trace does not give it).
    CASE WHEN busbw_offset = 0 THEN busbw_scale ELSE busbw_scale * (group_size - busbw_offset) / group_size END AS busbw_factor
FROM sized;
