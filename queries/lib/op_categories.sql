-- lib/op_categories: the category (GEMM, conv, attention, norm, elementwise, reduction,
-- communication, memory, other) of every framework op and every GPU kernel, copy and set.
-- include:
--
-- From: spans (kinds op, kernel, memcpy, memset), span_ancestors (a kernel's launching op), the
-- perf models (TEMP xsp_op_models) and the facts of xsp_trace/formats/op_categories.py (TEMP
-- xsp_model_categories: a modelled op's category; xsp_category_patterns: name patterns, first
-- match in rank order).

-- Category of each op name: its perf model's, else the first op pattern it matches, else other.
CREATE OR REPLACE TEMP VIEW xsp_op_name_categories AS
WITH names AS (SELECT DISTINCT name FROM spans WHERE kind = 'op')
SELECT
    -- Op name.
    n.name,
    -- Its category.
    coalesce(any_value(mc.category), arg_min(p.category, p.rank), 'other') AS category
FROM names AS n
LEFT JOIN xsp_op_models AS m ON m.op_name = n.name
LEFT JOIN xsp_model_categories AS mc ON mc.model = m.model
LEFT JOIN xsp_category_patterns AS p ON p.applies_to = 'op' AND regexp_matches(n.name, p.pattern, 'i')
GROUP BY n.name;

-- Category of every kernel, copy and set: memory for copies and sets, else what the kernel's name
-- says, else its launching op's (the nearest op above it), else other.
CREATE OR REPLACE TEMP VIEW xsp_kernel_categories AS
WITH gpu AS (
    SELECT run_id, span_id, name, kind, device_id, end_ns - start_ns AS dur_ns
    FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset')
), kernel_names AS (
    SELECT n.name, arg_min(p.category, p.rank) AS category
    FROM (SELECT DISTINCT name FROM gpu WHERE kind = 'kernel') AS n
    JOIN xsp_category_patterns AS p ON p.applies_to = 'kernel' AND regexp_matches(n.name, p.pattern, 'i')
    GROUP BY n.name
), launcher AS (
    SELECT an.run_id, an.span_id, arg_min(oc.category, an.distance) AS category
    FROM span_ancestors AS an
    JOIN spans AS o ON o.run_id = an.run_id AND o.span_id = an.ancestor_id AND o.kind = 'op'
    JOIN xsp_op_name_categories AS oc ON oc.name = o.name
    WHERE an.span_id IN (SELECT span_id FROM gpu WHERE gpu.run_id = an.run_id AND gpu.kind = 'kernel')
    GROUP BY an.run_id, an.span_id
)
SELECT
    -- Run.
    g.run_id,
    -- The kernel, copy or set.
    g.span_id,
    -- Its name.
    g.name,
    -- kernel, memcpy or memset.
    g.kind,
    -- The GPU it ran on.
    g.device_id,
    -- Its duration, ns.
    g.dur_ns,
    -- Its category.
    coalesce(CASE WHEN g.kind <> 'kernel' THEN 'memory' END, kn.category, l.category, 'other') AS category,
    -- What said so: 'kind' (a copy or set), 'kernel name', 'launching op' or 'none'.
    CASE WHEN g.kind <> 'kernel' THEN 'kind' WHEN kn.category IS NOT NULL THEN 'kernel name'
         WHEN l.category IS NOT NULL THEN 'launching op' ELSE 'none' END AS category_from
FROM gpu AS g
LEFT JOIN kernel_names AS kn ON kn.name = g.name AND g.kind = 'kernel'
LEFT JOIN launcher AS l ON l.run_id = g.run_id AND l.span_id = g.span_id;
