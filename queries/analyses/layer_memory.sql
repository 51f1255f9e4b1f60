-- analyses/layer_memory: memory of every layer (XSP "layer memory allocation"): the bytes of
-- its parameters and buffers as the capture recorded them.
--
-- From: the capture's `layers` metadata (empty for plain traces), one row per experiment and layer.
--
-- title: Layer memory
-- group: layer
-- include: lib/experiments
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, layer_type VARCHAR,
--     parameter_bytes BIGINT, buffer_bytes BIGINT, memory_bytes BIGINT, memory_pct DOUBLE,
--     output_shapes VARCHAR
SELECT
    -- Experiment: "<model> bs=<batch size>".
    r.experiment,
    -- Layer index, qualified name and type.
    l.layer_index,
    -- Qualified module name.
    any_value(l.name) AS layer_name,
    -- Module type.
    any_value(l.type) AS layer_type,
    -- Bytes of its parameters (weights, biases) and of its buffers (e.g. running statistics).
    any_value(l.parameter_bytes) AS parameter_bytes,
    -- Bytes of its buffers (e.g. running statistics).
    any_value(l.buffer_bytes) AS buffer_bytes,
    -- Their sum.
    any_value(l.parameter_bytes) + coalesce(any_value(l.buffer_bytes), 0) AS memory_bytes,
    -- Share of the model's layer memory, percent.
    round(100.0 * (any_value(l.parameter_bytes) + coalesce(any_value(l.buffer_bytes), 0))
          / sum(any_value(l.parameter_bytes) + coalesce(any_value(l.buffer_bytes), 0)) OVER (PARTITION BY r.experiment), 2) AS memory_pct,
    -- Output shapes of its first call (JSON).
    any_value(l.output_shapes) AS output_shapes
FROM layers AS l
JOIN xsp_runs AS r USING (run_id)
GROUP BY r.experiment, l.layer_index
ORDER BY r.experiment, l.layer_index;
