-- analyses/compare_runs: two runs side by side -- per layer and per kernel name, the calls and mean
-- latency per call in each, and the latency per inference where both runs have inferences (e.g.
-- before/after a change, two GPUs, two batch sizes). A run without inferences has no per-inference
-- figure (NULL): its window totals are never shown as one inference.
--
-- From: the prelude's xsp_layer_calls and xsp_kernel_calls (each run on its own, uncorrected).
-- The runs: SET VARIABLE xsp_compare_runs = [BASE, OTHER]; (xsp-trace analyze --compare BASE,OTHER);
-- by default the two lowest run ids.
--
-- title: Comparison of two runs
-- group: compare
-- include: lib/kernels
-- columns: base_run INTEGER, other_run INTEGER, item_kind VARCHAR, item VARCHAR, base_calls BIGINT,
--     other_calls BIGINT, base_ms_per_call DOUBLE, other_ms_per_call DOUBLE, per_call_ratio DOUBLE,
--     base_ms DOUBLE, other_ms DOUBLE, delta_ms DOUBLE, ratio DOUBLE
WITH pair AS (
    SELECT coalesce(getvariable('xsp_compare_runs')[1], (SELECT min(run_id) FROM runs)) AS base_run,
           coalesce(getvariable('xsp_compare_runs')[2],
                    (SELECT min(run_id) FROM runs WHERE run_id > (SELECT min(run_id) FROM runs))) AS other_run
), inferences AS (
    SELECT r.run_id, count(i.span_id) AS n
    FROM runs AS r LEFT JOIN xsp_inferences AS i USING (run_id) GROUP BY r.run_id
), layer_per_call AS (
    SELECT run_id, layer_index, any_value(layer_name) AS layer_name, count(*) AS calls, avg(latency_ns) AS ns_per_call
    FROM xsp_layer_calls GROUP BY run_id, layer_index, layer_name
), layer_samples AS (
    SELECT run_id, iteration, layer_index, any_value(layer_name) AS layer_name, sum(latency_ns) AS ns
    FROM xsp_layer_calls GROUP BY run_id, iteration, layer_index
), layers AS (
    SELECT s.run_id, 'layer' AS item_kind, s.layer_index || ':' || coalesce(s.layer_name, '') AS item, s.layer_index AS sort_key,
           CASE WHEN any_value(n.n) > 0 THEN xsp_trimmed_mean(list(s.ns)) END AS ns,
           any_value(p.calls) AS calls, any_value(p.ns_per_call) AS ns_per_call
    FROM layer_samples AS s
    JOIN inferences AS n USING (run_id)
    JOIN layer_per_call AS p ON p.run_id = s.run_id AND p.layer_index = s.layer_index AND p.layer_name IS NOT DISTINCT FROM s.layer_name
    GROUP BY s.run_id, s.layer_index, s.layer_name
), kernel_keys AS (
    SELECT c.run_id, c.name, xsp_trimmed_mean(list(c.duration_ns)) * count(*) / nullif(any_value(n.n), 0) AS ns
    FROM xsp_kernel_calls AS c JOIN inferences AS n USING (run_id)
    WHERE c.in_inference
    GROUP BY c.run_id, c.layer_index, c.layer_name, c.layer_call, c.ordinal, c.name
), kernel_per_call AS (
    SELECT run_id, name, count(*) AS calls, avg(duration_ns) AS ns_per_call FROM xsp_kernel_calls GROUP BY run_id, name
), kernels AS (
    SELECT k.run_id, 'kernel' AS item_kind, k.name AS item, NULL AS sort_key, sum(k.ns) AS ns,
           any_value(p.calls) AS calls, any_value(p.ns_per_call) AS ns_per_call
    FROM kernel_keys AS k JOIN kernel_per_call AS p USING (run_id, name) GROUP BY k.run_id, k.name
), items AS (
    SELECT * FROM layers UNION ALL SELECT * FROM kernels
), joined AS (
    SELECT coalesce(b.item_kind, o.item_kind) AS item_kind, coalesce(b.item, o.item) AS item,
           coalesce(b.sort_key, o.sort_key) AS sort_key, b.ns AS base_ns, o.ns AS other_ns,
           b.calls AS base_calls, o.calls AS other_calls, b.ns_per_call AS base_ns_per_call, o.ns_per_call AS other_ns_per_call
    FROM (SELECT i.* FROM items AS i, pair WHERE i.run_id = pair.base_run) AS b
    FULL JOIN (SELECT i.* FROM items AS i, pair WHERE i.run_id = pair.other_run) AS o
        ON o.item_kind = b.item_kind AND o.item = b.item
)
SELECT
    -- The two runs compared.
    pair.base_run,
    -- The run compared with the base.
    pair.other_run,
    -- layer or kernel.
    j.item_kind,
    -- Layer "index:name", or kernel name.
    j.item,
    -- Calls in the base run (NULL where the item does not occur there).
    j.base_calls,
    -- Calls in the other run.
    j.other_calls,
    -- Mean latency per call in the base run, ms.
    round(j.base_ns_per_call / 1e6, 6) AS base_ms_per_call,
    -- Mean latency per call in the other run, ms.
    round(j.other_ns_per_call / 1e6, 6) AS other_ms_per_call,
    -- Ratio of the means per call, other / base (above 1: slower per call in the other run).
    round(j.other_ns_per_call / nullif(j.base_ns_per_call, 0), 4) AS per_call_ratio,
    -- Latency per inference in the base run, ms (layers: trimmed mean over inferences; kernels: summed
    -- trimmed means of its launches); NULL where the item does not occur or the run has no inferences.
    round(j.base_ns / 1e6, 6) AS base_ms,
    -- Latency per inference in the other run, ms (NULL where the item does not occur there).
    round(j.other_ns / 1e6, 6) AS other_ms,
    -- Difference other - base, ms, and ratio other / base.
    round((j.other_ns - j.base_ns) / 1e6, 6) AS delta_ms,
    -- Ratio other / base (above 1: slower in the other run).
    round(j.other_ns / nullif(j.base_ns, 0), 4) AS ratio
FROM joined AS j, pair
ORDER BY j.item_kind DESC, j.sort_key, abs(coalesce(j.other_ns, 0) - coalesce(j.base_ns, 0)) DESC,
    abs(coalesce(j.other_ns_per_call, 0) - coalesce(j.base_ns_per_call, 0)) * coalesce(j.other_calls, j.base_calls) DESC, j.item;
