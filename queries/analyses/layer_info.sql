-- analyses/layer_info: every layer of every model -- index, name, type, shapes, latency, memory
-- (XSP "layer information").
--
-- From: the prelude's xsp_layer_latency (layer ranges of the ML run) and the capture's `layers`
-- metadata (shapes, parameter bytes; empty for plain traces).
--
-- title: Layer information
-- group: layer
-- include: lib/latency
-- columns: experiment VARCHAR, layer_index INTEGER, layer_name VARCHAR, layer_type VARCHAR,
--     input_shapes VARCHAR, output_shapes VARCHAR, calls_per_inference BIGINT, latency_ms DOUBLE,
--     corrected BOOLEAN, memory_bytes BIGINT
WITH meta AS (
    SELECT r.experiment, l.layer_index,
           any_value(l.name) AS name, any_value(l.type) AS type,
           any_value(l.input_shapes) AS input_shapes, any_value(l.output_shapes) AS output_shapes,
           any_value(l.parameter_bytes) AS parameter_bytes, any_value(l.buffer_bytes) AS buffer_bytes
    FROM layers AS l JOIN xsp_runs AS r USING (run_id)
    GROUP BY r.experiment, l.layer_index
)
SELECT
    -- Experiment: "<model> bs=<batch size>", or "run <id>" for a plain trace.
    t.experiment,
    -- Layer index in the model (module tree order).
    t.layer_index,
    -- Qualified module name and module type.
    coalesce(t.layer_name, m.name) AS layer_name,
    -- Module type.
    coalesce(t.layer_type, m.type) AS layer_type,
    -- Shapes of the inputs and output of its first call (JSON), where captured.
    m.input_shapes,
    -- Shapes of the output of its first call (JSON), where captured.
    m.output_shapes,
    -- Calls per inference.
    t.calls_per_inference,
    -- Trimmed-mean latency per inference (all calls), ms, and whether it is corrected (ML run).
    round(t.trimmed_mean_ns / 1e6, 6) AS latency_ms,
    -- Whether that latency is corrected (taken from the ML run).
    t.corrected,
    -- Memory of the layer: bytes of its parameters and buffers, where captured.
    m.parameter_bytes + coalesce(m.buffer_bytes, 0) AS memory_bytes
FROM xsp_layer_latency AS t
LEFT JOIN meta AS m ON m.experiment = t.experiment AND m.layer_index = t.layer_index
ORDER BY t.experiment, t.layer_index;
