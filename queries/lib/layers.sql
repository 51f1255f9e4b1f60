-- lib/layers: the layer calls of every run with their stable keys (layer index and name, the call
-- within an inference), and the layer call every span is charged to.
-- include:
--
-- From: spans (kind 'layer', or the ranges matching the variable xsp_layer_pattern), span_ancestors,
-- attribution; the macros xsp_layer_qualname(name) and xsp_layer_type(name) (xsp_trace/naming.py).

-- The layer ranges of every run: kind = 'layer' spans (the ranges xsp-trace capture writes), or,
-- when the variable xsp_layer_pattern is set, the CPU ranges a trace already has whose name
-- matches it (NVTX/emit_nvtx ranges, record_function, nn.Module events of with_modules...):
--     SET VARIABLE xsp_layer_pattern = '^nn\.Module: (\w+)';  -- a regular expression (RE2)
--     SET VARIABLE xsp_layer_name_group = 1;   -- its group that is the layer name (0: the whole name)
--     SET VARIABLE xsp_layer_type_group = 0;   -- its group that is the layer type (0: the category)
--     SET VARIABLE xsp_layer_depth = 1;        -- nesting level among matching ranges (1 = outermost);
--                                              -- unset: the innermost ones (leaves, as XSP's layers)
-- (`xsp-trace analyze --layer-ranges PATTERN --layer-depth N` sets them.) A mapped layer's index
-- is the rank of its name by first appearance in the run.
CREATE OR REPLACE TEMP VIEW xsp_layer_ranges AS
WITH captured AS (
    SELECT run_id, span_id, iteration, layer_index, xsp_layer_qualname(name) AS layer_name,
           xsp_layer_type(name) AS layer_type, start_ns, end_ns
    FROM spans
    WHERE kind = 'layer' AND getvariable('xsp_layer_pattern') IS NULL
), matched AS (
    SELECT run_id, span_id, iteration, name, category, start_ns, end_ns
    FROM spans
    WHERE getvariable('xsp_layer_pattern') IS NOT NULL AND tid IS NOT NULL
      AND kind IN ('annotation', 'op', 'layer', 'other')
      AND regexp_matches(name, getvariable('xsp_layer_pattern'))
), levelled AS (
    SELECT m.*,
           1 + (SELECT count(*) FROM span_ancestors AS a JOIN matched AS o ON o.run_id = a.run_id AND o.span_id = a.ancestor_id
                WHERE a.run_id = m.run_id AND a.span_id = m.span_id) AS level,
           EXISTS (SELECT 1 FROM span_ancestors AS a JOIN matched AS i ON i.run_id = a.run_id AND i.span_id = a.span_id
                   WHERE a.run_id = m.run_id AND a.ancestor_id = m.span_id) AS has_inner
    FROM matched AS m
), mapped AS (
    SELECT run_id, span_id, iteration,
           CASE WHEN coalesce(getvariable('xsp_layer_name_group'), 0) > 0
                THEN regexp_extract(name, getvariable('xsp_layer_pattern'), getvariable('xsp_layer_name_group'))
                ELSE name END AS layer_name,
           CASE WHEN coalesce(getvariable('xsp_layer_type_group'), 0) > 0
                THEN regexp_extract(name, getvariable('xsp_layer_pattern'), getvariable('xsp_layer_type_group'))
                ELSE category END AS layer_type,
           start_ns, end_ns
    FROM levelled
    WHERE CASE WHEN getvariable('xsp_layer_depth') IS NULL THEN NOT has_inner
               ELSE level = getvariable('xsp_layer_depth') END
)
SELECT run_id, span_id, iteration, layer_index, layer_name, layer_type, start_ns, end_ns FROM captured
UNION ALL
SELECT
    -- Run.
    run_id,
    -- The layer range.
    span_id,
    -- Its iteration.
    iteration,
    -- Layer index: the capture's, else the rank of the name by first appearance.
    CAST(dense_rank() OVER (PARTITION BY run_id ORDER BY first_ns, layer_name) - 1 AS INTEGER) AS layer_index,
    -- Layer name.
    layer_name,
    -- Layer type.
    layer_type,
    -- Start, ns.
    start_ns,
    -- End, ns.
    end_ns
FROM (SELECT *, min(start_ns) OVER (PARTITION BY run_id, layer_name) AS first_ns FROM mapped);

-- Every layer call of every run with its stable key (layer index, name, call within the inference).
CREATE OR REPLACE TEMP VIEW xsp_layer_calls AS
SELECT
    -- Run.
    run_id,
    -- The layer range.
    span_id,
    -- Its iteration.
    iteration,
    -- Layer index.
    layer_index,
    -- Layer name.
    layer_name,
    -- Layer type.
    layer_type,
    -- The call of the layer within the inference (0 first).
    row_number() OVER (PARTITION BY run_id, iteration, layer_index ORDER BY start_ns, span_id) - 1 AS layer_call,
    -- Start, ns.
    start_ns,
    -- End, ns.
    end_ns,
    -- Latency, ns.
    end_ns - start_ns AS latency_ns
FROM xsp_layer_ranges;

-- The layer call every span is charged to: the innermost layer range enclosing it (a GPU span:
-- enclosing its launch), else -- autograd backward work on another thread -- the innermost one
-- enclosing the forward op that created it (attribution.forward_span_id).
CREATE OR REPLACE TEMP VIEW xsp_span_layer AS
WITH enclosing AS (
    SELECT a.run_id, a.span_id, arg_min(a.ancestor_id, a.distance) AS layer_span_id
    FROM span_ancestors AS a
    JOIN xsp_layer_ranges AS l ON l.run_id = a.run_id AND l.span_id = a.ancestor_id
    GROUP BY a.run_id, a.span_id
), forward_layer AS (
    SELECT att.run_id, att.span_id, coalesce(fl.span_id, fe.layer_span_id) AS layer_span_id
    FROM attribution AS att
    LEFT JOIN xsp_layer_ranges AS fl ON fl.run_id = att.run_id AND fl.span_id = att.forward_span_id
    LEFT JOIN enclosing AS fe ON fe.run_id = att.run_id AND fe.span_id = att.forward_span_id
    WHERE att.forward_span_id IS NOT NULL
)
SELECT
    -- Run.
    coalesce(e.run_id, f.run_id) AS run_id,
    -- The span.
    coalesce(e.span_id, f.span_id) AS span_id,
    -- The layer range it is charged to.
    coalesce(e.layer_span_id, f.layer_span_id) AS layer_span_id,
    -- How: 'enclosing' (inside the range) or 'autograd' (through its forward op).
    CASE WHEN e.layer_span_id IS NOT NULL THEN 'enclosing' ELSE 'autograd' END AS layer_rule
FROM enclosing AS e
FULL JOIN forward_layer AS f ON f.run_id = e.run_id AND f.span_id = e.span_id
WHERE coalesce(e.layer_span_id, f.layer_span_id) IS NOT NULL;
