-- analyses/compare_runs: two runs side by side -- per layer and per kernel name, the latency per
-- inference in each and the difference (e.g. before/after a change, two GPUs, two batch sizes).
--
-- From: the prelude's _xsp_layer_calls and _xsp_kernel_calls (each run on its own, uncorrected).
-- The runs: SET VARIABLE xsp_compare_runs = [BASE, OTHER]; (xsp-trace analyze --compare BASE,OTHER);
-- by default the two lowest run ids.
WITH pair AS (
    SELECT coalesce(getvariable('xsp_compare_runs')[1], (SELECT min(run_id) FROM runs)) AS base_run,
           coalesce(getvariable('xsp_compare_runs')[2],
                    (SELECT min(run_id) FROM runs WHERE run_id > (SELECT min(run_id) FROM runs))) AS other_run
), inferences AS (
    SELECT r.run_id, greatest(count(i.span_id), 1) AS n
    FROM runs AS r LEFT JOIN _xsp_inferences AS i USING (run_id) GROUP BY r.run_id
), layer_samples AS (
    SELECT run_id, iteration, layer_index, any_value(layer_name) AS layer_name, sum(latency_ns) AS ns
    FROM _xsp_layer_calls GROUP BY run_id, iteration, layer_index
), layers AS (
    SELECT run_id, 'layer' AS item_kind, layer_index || ':' || coalesce(layer_name, '') AS item, layer_index AS sort_key,
           xsp_trimmed_mean(list(ns)) AS ns
    FROM layer_samples GROUP BY run_id, layer_index, layer_name
), kernel_keys AS (
    SELECT c.run_id, c.name, xsp_trimmed_mean(list(c.duration_ns)) * count(*) / any_value(n.n) AS ns
    FROM _xsp_kernel_calls AS c JOIN inferences AS n USING (run_id)
    WHERE c.in_inference
    GROUP BY c.run_id, c.layer_index, c.layer_name, c.layer_call, c.ordinal, c.name
), kernels AS (
    SELECT run_id, 'kernel' AS item_kind, name AS item, NULL AS sort_key, sum(ns) AS ns
    FROM kernel_keys GROUP BY run_id, name
), items AS (
    SELECT * FROM layers UNION ALL SELECT * FROM kernels
), joined AS (
    SELECT coalesce(b.item_kind, o.item_kind) AS item_kind, coalesce(b.item, o.item) AS item,
           coalesce(b.sort_key, o.sort_key) AS sort_key, b.ns AS base_ns, o.ns AS other_ns
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
    -- Latency per inference in each run, ms (layers: trimmed mean over inferences; kernels: summed
    -- trimmed means of its launches); NULL where the item does not occur.
    round(j.base_ns / 1e6, 6) AS base_ms,
    -- Latency per inference in the other run, ms (NULL where the item does not occur there).
    round(j.other_ns / 1e6, 6) AS other_ms,
    -- Difference other - base, ms, and ratio other / base.
    round((j.other_ns - j.base_ns) / 1e6, 6) AS delta_ms,
    -- Ratio other / base (above 1: slower in the other run).
    round(j.other_ns / nullif(j.base_ns, 0), 4) AS ratio
FROM joined AS j, pair
ORDER BY j.item_kind DESC, j.sort_key, abs(coalesce(j.other_ns, 0) - coalesce(j.base_ns, 0)) DESC, j.item;
