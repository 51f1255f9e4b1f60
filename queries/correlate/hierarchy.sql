-- correlate/hierarchy: the whole-stack tree of one run, once CPU spans are nested and launches linked.
--
-- From: `spans` of run getvariable('xsp_run_id') (CPU spans already carry parent_id/depth from
-- the per-thread containment walk) and its `launches`.
-- Computes:
--   * GPU spans become children of the API call that launched them (depth = API depth + 1);
--     unlaunched GPU spans stay at depth 0.
--   * `span_ancestors`: every (span, ancestor) pair along parent_id, so a kernel reaches its API
--     call, op, layer and model ranges -- the NVTX projection onto the GPU that nsys's
--     nvtx_gpu_proj_trace computes.
--   * `iteration` of model spans without one: numbered per process in start order from 0
--     (descendants inherit iterations top-down afterwards: xsp_trace.correlate.inherit_down).

UPDATE spans
SET parent_id = l.api_span_id, depth = api.depth + 1
FROM launches AS l
JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
WHERE spans.run_id = getvariable('xsp_run_id')
  AND l.run_id = getvariable('xsp_run_id')
  AND spans.span_id = l.gpu_span_id;

UPDATE spans SET depth = 0
WHERE run_id = getvariable('xsp_run_id') AND depth IS NULL;

INSERT INTO span_ancestors (run_id, span_id, ancestor_id, distance)
WITH RECURSIVE
    run_spans AS (
        SELECT span_id, parent_id FROM spans
        WHERE run_id = getvariable('xsp_run_id') AND parent_id IS NOT NULL
    ),
    up(span_id, ancestor_id, distance) AS (
        SELECT span_id, parent_id, 1 FROM run_spans
        UNION ALL
        SELECT up.span_id, p.parent_id, up.distance + 1
        FROM up JOIN run_spans AS p ON p.span_id = up.ancestor_id
    )
SELECT getvariable('xsp_run_id'), span_id, ancestor_id, distance FROM up;

UPDATE spans SET iteration = m.ordinal
FROM (
    SELECT span_id, row_number() OVER (PARTITION BY pid ORDER BY start_ns, span_id) - 1 AS ordinal
    FROM spans
    WHERE run_id = getvariable('xsp_run_id') AND kind = 'model'
) AS m
WHERE spans.run_id = getvariable('xsp_run_id') AND spans.span_id = m.span_id
  AND spans.iteration IS NULL
  AND NOT EXISTS (SELECT 1 FROM spans s WHERE s.run_id = getvariable('xsp_run_id') AND s.iteration IS NOT NULL);
