-- correlate/hierarchy: the whole-stack tree of one run, once CPU spans are nested and launches linked.
--
-- From: `spans` of run getvariable('xsp_run_id') (CPU spans already carry parent_id/depth from
-- the per-thread containment walk) and its `launches`.
-- Computes:
--   * GPU spans become children of the API call that launched them (depth = API depth + 1);
--     unlaunched GPU spans stay at depth 0.
--   * every span's depth is its parent's + 1 (an API call without a thread, never nested, is at
--     depth 0 and its GPU spans at 1), which xsp_trace.convert.correlate.build_ancestors relies on to
--     fill `span_ancestors` level by level afterwards.
--   * `iteration` of model spans without one: numbered per process in start order from 0
--     (descendants inherit iterations top-down afterwards: xsp_trace.convert.correlate.inherit_down).

UPDATE spans
SET parent_id = l.api_span_id, depth = coalesce(api.depth, 0) + 1
FROM launches AS l
JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
WHERE spans.run_id = getvariable('xsp_run_id')
  AND l.run_id = getvariable('xsp_run_id')
  AND spans.span_id = l.gpu_span_id;

UPDATE spans SET depth = 0
WHERE run_id = getvariable('xsp_run_id') AND depth IS NULL;

UPDATE spans SET iteration = m.ordinal
FROM (
    SELECT span_id, row_number() OVER (PARTITION BY pid ORDER BY start_ns, span_id) - 1 AS ordinal
    FROM spans
    WHERE run_id = getvariable('xsp_run_id') AND kind = 'model'
) AS m
WHERE spans.run_id = getvariable('xsp_run_id') AND spans.span_id = m.span_id
  AND spans.iteration IS NULL
  AND NOT EXISTS (SELECT 1 FROM spans s WHERE s.run_id = getvariable('xsp_run_id') AND s.iteration IS NOT NULL);
