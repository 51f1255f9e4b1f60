-- analyses/prelude: the building blocks every XSP analysis (queries/analyses/<name>.sql) reads --
-- leveled overhead correction, statistics over iterations, stable keys across runs, metrics
-- and device roofs. Everything is TEMP (lives in the session), so it works on read-only databases.
--
-- From: runs, spans, span_ancestors, metrics, devices, layers, capture_latencies.
-- Load it first, then run any analysis, e.g. in the duckdb shell:
--     duckdb -readonly run.duckdb
--     .read queries/analyses/prelude.sql
--     .read queries/analyses/layer_latency.sql
-- (`xsp-trace analyze` does the same, plus the --run filter and device-peak defaults.)
-- Optional settings, before the analysis (DuckDB variables):
--     SET VARIABLE xsp_trim = 0.2;                     -- trimmed-mean fraction per tail
--     SET VARIABLE xsp_peak_flops = 19.5e12;           -- override every device's peak FLOP/s
--     SET VARIABLE xsp_peak_dram_bytes_per_s = 1.555e12;
--     SET VARIABLE xsp_compare_runs = [1, 2];          -- the two runs analyses/compare_runs compares
--
-- Leveled measurement (docs/design.md): an experiment is one (model, batch size) captured at several
-- levels; model latency comes only from its M run, layer latency only from its ML run, kernel
-- latency only from its MLG run, metrics from metric runs. A plain trace (runs.level NULL) is an
-- experiment of its own and serves every level, uncorrected (xsp_level_sources says so).
-- Spans are matched across runs by stable keys: model and batch size (the experiment), layer
-- index and name, the call of the layer within an inference, and the kernel's ordinal within
-- that layer call (in launch order). An inference is a model range (else the outermost range
-- that carries an iteration, e.g. ProfilerStep#N); a trace without either is one inference.

-- Trimmed mean as the XSP authors' code computes it (rai-project/evaluation TrimmedMean, trim
-- 0.2): sort; n < 3: the mean; n = 3: the middle value; otherwise drop floor(n*frac) values from
-- the bottom and floor(n*frac) from the top but at least the largest one, and average the rest.
CREATE OR REPLACE TEMP MACRO xsp_trimmed_mean(l, frac := NULL) AS (
    CASE
        WHEN len(l) = 0 THEN NULL
        WHEN len(l) < 3 THEN list_avg(l)
        WHEN len(l) = 3 THEN CAST(list_sort(l)[2] AS DOUBLE)
        ELSE list_avg(list_slice(
            list_sort(l),
            CAST(floor(len(l) * coalesce(frac, getvariable('xsp_trim'), 0.2)) AS BIGINT) + 1,
            least(len(l) - 1, len(l) - CAST(floor(len(l) * coalesce(frac, getvariable('xsp_trim'), 0.2)) AS BIGINT))))
    END
);

-- XSP range names are parsed by the macros xsp_model_name(name), xsp_layer_qualname(name) and
-- xsp_layer_type(name), which xsp_trace/naming.py (install_name_macros) creates before this file
-- runs: the range-name convention lives there only.

-- Every run with its experiment.
CREATE OR REPLACE TEMP VIEW xsp_runs AS
SELECT
    run_id, level, model, batch_size, source_kind, tool,
    CASE WHEN level IS NULL THEN 'run ' || run_id
         ELSE coalesce(model, '?') || ' bs=' || coalesce(CAST(batch_size AS VARCHAR), '?') END AS experiment
FROM runs;

-- Which run level serves which measured level, best first; `corrected` = measured without the
-- overhead of profiling the levels below it. NULL level = a plain trace.
CREATE OR REPLACE TEMP VIEW _xsp_level_preference AS
SELECT * FROM (VALUES
    ('model', 'M', 1, TRUE), ('model', 'ML', 2, FALSE), ('model', 'MLG', 3, FALSE), ('model', NULL, 4, FALSE),
    ('layer', 'ML', 1, TRUE), ('layer', 'MLG', 2, FALSE), ('layer', NULL, 3, FALSE),
    ('kernel', 'MLG', 1, TRUE), ('kernel', NULL, 2, TRUE)
) AS t(measured, level, preference, corrected);

-- The inferences of every run: its steps (model ranges, else the outermost CPU ranges carrying an
-- iteration, e.g. ProfilerStep#N; never a GPU copy of one), found at conversion (table steps).
CREATE OR REPLACE TEMP VIEW _xsp_inferences AS
SELECT st.run_id, st.step_span_id AS span_id, st.iteration, s.name, st.start_ns, st.end_ns, st.source
FROM steps AS st
JOIN spans AS s ON s.run_id = st.run_id AND s.span_id = st.step_span_id;

-- One row per experiment: its model name and batch size.
CREATE OR REPLACE TEMP VIEW xsp_experiments AS
SELECT
    r.experiment,
    coalesce(any_value(r.model), any_value(xsp_model_name(i.name))) AS model,
    any_value(r.batch_size) AS batch_size,
    bool_and(r.level IS NULL) AS plain,
    list(DISTINCT r.run_id ORDER BY r.run_id) AS run_ids
FROM xsp_runs AS r
LEFT JOIN _xsp_inferences AS i ON i.run_id = r.run_id AND i.source = 'model range'
GROUP BY r.experiment;

-- The runs each measured level of each experiment is taken from (all runs of the best level).
CREATE OR REPLACE TEMP VIEW _xsp_source_runs AS
WITH candidates AS (
    SELECT r.experiment, p.measured, r.run_id, r.level, p.preference, p.corrected
    FROM xsp_runs AS r
    JOIN _xsp_level_preference AS p ON p.level IS NOT DISTINCT FROM r.level
), best AS (
    SELECT experiment, measured, min(preference) AS preference FROM candidates GROUP BY ALL
)
SELECT c.experiment, c.measured, c.run_id, c.level, c.corrected
FROM candidates AS c JOIN best USING (experiment, measured, preference);

-- Number of inferences in the source runs of each (experiment, measured level); at least 1.
CREATE OR REPLACE TEMP VIEW _xsp_inference_counts AS
SELECT s.experiment, s.measured, greatest(count(i.span_id), 1) AS inferences,
       count(i.span_id) > 0 AS has_inferences
FROM _xsp_source_runs AS s
LEFT JOIN _xsp_inferences AS i USING (run_id)
GROUP BY ALL;

-- Which run level every measured level of every experiment came from, and whether it is corrected.
CREATE OR REPLACE TEMP VIEW xsp_level_sources AS
SELECT s.experiment, s.measured, s.level, s.corrected,
       list(s.run_id ORDER BY s.run_id) AS run_ids, any_value(c.inferences) AS inferences
FROM _xsp_source_runs AS s
JOIN _xsp_inference_counts AS c USING (experiment, measured)
GROUP BY s.experiment, s.measured, s.level, s.corrected;

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
CREATE OR REPLACE TEMP VIEW _xsp_layer_ranges AS
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
SELECT run_id, span_id, iteration,
       CAST(dense_rank() OVER (PARTITION BY run_id ORDER BY first_ns, layer_name) - 1 AS INTEGER) AS layer_index,
       layer_name, layer_type, start_ns, end_ns
FROM (SELECT *, min(start_ns) OVER (PARTITION BY run_id, layer_name) AS first_ns FROM mapped);

-- Every layer call of every run with its stable key (layer index, name, call within the inference).
CREATE OR REPLACE TEMP VIEW _xsp_layer_calls AS
SELECT
    run_id, span_id, iteration, layer_index, layer_name, layer_type,
    row_number() OVER (PARTITION BY run_id, iteration, layer_index ORDER BY start_ns, span_id) - 1 AS layer_call,
    start_ns, end_ns, end_ns - start_ns AS latency_ns
FROM _xsp_layer_ranges;

-- The layer call every span is charged to: the innermost layer range enclosing it (a GPU span:
-- enclosing its launch), else -- autograd backward work on another thread -- the innermost one
-- enclosing the forward op that created it (attribution.forward_span_id).
CREATE OR REPLACE TEMP VIEW _xsp_span_layer AS
WITH enclosing AS (
    SELECT a.run_id, a.span_id, arg_min(a.ancestor_id, a.distance) AS layer_span_id
    FROM span_ancestors AS a
    JOIN _xsp_layer_ranges AS l ON l.run_id = a.run_id AND l.span_id = a.ancestor_id
    GROUP BY a.run_id, a.span_id
), forward_layer AS (
    SELECT att.run_id, att.span_id, coalesce(fl.span_id, fe.layer_span_id) AS layer_span_id
    FROM attribution AS att
    LEFT JOIN _xsp_layer_ranges AS fl ON fl.run_id = att.run_id AND fl.span_id = att.forward_span_id
    LEFT JOIN enclosing AS fe ON fe.run_id = att.run_id AND fe.span_id = att.forward_span_id
    WHERE att.forward_span_id IS NOT NULL
)
SELECT coalesce(e.run_id, f.run_id) AS run_id, coalesce(e.span_id, f.span_id) AS span_id,
       coalesce(e.layer_span_id, f.layer_span_id) AS layer_span_id,
       CASE WHEN e.layer_span_id IS NOT NULL THEN 'enclosing' ELSE 'autograd' END AS layer_rule
FROM enclosing AS e
FULL JOIN forward_layer AS f ON f.run_id = e.run_id AND f.span_id = e.span_id
WHERE coalesce(e.layer_span_id, f.layer_span_id) IS NOT NULL;

-- Every kernel of every run with its stable key: its layer call (above), ordinal within it
-- (launch order), the step it was launched in (whatever the launching thread) and its phase.
CREATE OR REPLACE TEMP VIEW _xsp_kernel_calls AS
WITH with_inferences AS (
    SELECT DISTINCT run_id FROM _xsp_inferences
), k AS (
    SELECT
        k.run_id, k.span_id, k.name, k.device_id, k.stream_id, k.iteration, k.start_ns, k.end_ns,
        sl.layer_span_id, sl.layer_rule, lc.layer_index, lc.layer_name, lc.layer_call, att.phase,
        coalesce(api.start_ns, k.start_ns) AS launch_ns,
        (k.iteration IS NOT NULL OR k.run_id NOT IN (SELECT run_id FROM with_inferences)) AS in_inference
    FROM spans AS k
    LEFT JOIN _xsp_span_layer AS sl ON sl.run_id = k.run_id AND sl.span_id = k.span_id
    LEFT JOIN _xsp_layer_calls AS lc ON lc.run_id = k.run_id AND lc.span_id = sl.layer_span_id
    LEFT JOIN attribution AS att ON att.run_id = k.run_id AND att.span_id = k.span_id
    LEFT JOIN spans AS api ON api.run_id = k.run_id AND api.span_id = k.parent_id
    WHERE k.kind = 'kernel'
)
SELECT *,
    row_number() OVER (PARTITION BY run_id, iteration, layer_span_id ORDER BY launch_ns, start_ns, span_id) - 1 AS ordinal,
    end_ns - start_ns AS duration_ns
FROM k;

-- Hardware metrics of every kernel span, as xsp-trace derives them at import (the derived metric
-- names are variables set from xsp_trace/formats/ncu_metrics.py).
CREATE OR REPLACE TEMP VIEW _xsp_kernel_metric_values AS
SELECT
    run_id, span_id,
    sum(value) FILTER (WHERE metric = getvariable('xsp_metric_flops')) AS flops,
    sum(value) FILTER (WHERE metric = getvariable('xsp_metric_dram_read_bytes')) AS dram_read_bytes,
    sum(value) FILTER (WHERE metric = getvariable('xsp_metric_dram_write_bytes')) AS dram_write_bytes,
    avg(value) FILTER (WHERE metric = getvariable('xsp_metric_achieved_occupancy')) AS achieved_occupancy
FROM metrics
WHERE metric IN (getvariable('xsp_metric_flops'), getvariable('xsp_metric_dram_read_bytes'),
                 getvariable('xsp_metric_dram_write_bytes'), getvariable('xsp_metric_achieved_occupancy'))
GROUP BY run_id, span_id;

-- Metrics per stable kernel key, from whichever run of the experiment they were measured in.
CREATE OR REPLACE TEMP VIEW _xsp_kernel_key_metrics AS
SELECT
    r.experiment, c.layer_index, c.layer_name, c.layer_call, c.ordinal, c.name, c.in_inference,
    avg(m.flops) AS flops, avg(m.dram_read_bytes) AS dram_read_bytes,
    avg(m.dram_write_bytes) AS dram_write_bytes, avg(m.achieved_occupancy) AS achieved_occupancy
FROM _xsp_kernel_metric_values AS m
JOIN _xsp_kernel_calls AS c USING (run_id, span_id)
JOIN xsp_runs AS r USING (run_id)
GROUP BY ALL;

-- Kernel latency per stable key over the inferences of the kernel-level source runs, with metrics.
CREATE OR REPLACE TEMP VIEW xsp_kernel_latency AS
WITH keyed AS (
    SELECT s.experiment, s.level, s.corrected, c.*
    FROM _xsp_source_runs AS s
    JOIN _xsp_kernel_calls AS c USING (run_id)
    WHERE s.measured = 'kernel'
), stats AS (
    SELECT
        experiment, level, corrected, layer_index, layer_name, layer_call, ordinal, name, in_inference,
        -- 'enclosing': launched inside the layer range; 'autograd': backward work of the layer's forward op.
        any_value(layer_rule) AS layer_rule,
        mode(device_id) AS device_id,
        count(*) AS samples,
        xsp_trimmed_mean(list(duration_ns)) AS trimmed_mean_ns,
        median(duration_ns) AS median_ns,
        quantile_cont(duration_ns, 0.9) AS p90_ns,
        sum(duration_ns) AS total_ns,
        list(run_id ORDER BY run_id)[1] AS first_run_id
    FROM keyed
    GROUP BY experiment, level, corrected, layer_index, layer_name, layer_call, ordinal, name, in_inference
)
SELECT
    st.*,
    CASE WHEN st.in_inference THEN st.samples / n.inferences ELSE 0 END AS calls_per_inference,
    m.flops, m.dram_read_bytes, m.dram_write_bytes, m.achieved_occupancy
FROM stats AS st
JOIN _xsp_inference_counts AS n ON n.experiment = st.experiment AND n.measured = 'kernel'
LEFT JOIN _xsp_kernel_key_metrics AS m
    ON m.experiment = st.experiment AND m.name = st.name AND m.ordinal = st.ordinal
   AND m.in_inference = st.in_inference
   AND m.layer_index IS NOT DISTINCT FROM st.layer_index AND m.layer_name IS NOT DISTINCT FROM st.layer_name
   AND m.layer_call IS NOT DISTINCT FROM st.layer_call;

-- Model latency per experiment, from its model-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_model_latency AS
SELECT
    s.experiment, e.model, e.batch_size, s.level, s.corrected,
    count(*) AS samples,
    xsp_trimmed_mean(list(i.end_ns - i.start_ns)) AS trimmed_mean_ns,
    median(i.end_ns - i.start_ns) AS median_ns,
    quantile_cont(i.end_ns - i.start_ns, 0.9) AS p90_ns,
    min(i.end_ns - i.start_ns) AS min_ns,
    max(i.end_ns - i.start_ns) AS max_ns
FROM _xsp_source_runs AS s
JOIN _xsp_inferences AS i USING (run_id)
JOIN xsp_experiments AS e USING (experiment)
WHERE s.measured = 'model'
GROUP BY s.experiment, e.model, e.batch_size, s.level, s.corrected;

-- Layer latency per (experiment, layer): the layer's total time per inference (all its calls),
-- over the inferences of the layer-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_layer_latency AS
WITH per_inference AS (
    SELECT s.experiment, s.level, s.corrected, c.run_id, c.iteration, c.layer_index,
           any_value(c.layer_name) AS layer_name, any_value(c.layer_type) AS layer_type,
           count(*) AS calls, sum(c.latency_ns) AS latency_ns
    FROM _xsp_source_runs AS s
    JOIN _xsp_layer_calls AS c USING (run_id)
    WHERE s.measured = 'layer'
    GROUP BY s.experiment, s.level, s.corrected, c.run_id, c.iteration, c.layer_index
)
SELECT
    experiment, layer_index, layer_name, layer_type, level, corrected,
    count(*) AS samples,
    max(calls) AS calls_per_inference,
    xsp_trimmed_mean(list(latency_ns)) AS trimmed_mean_ns,
    median(latency_ns) AS median_ns,
    quantile_cont(latency_ns, 0.9) AS p90_ns
FROM per_inference
GROUP BY experiment, layer_index, layer_name, layer_type, level, corrected;

-- GPU aggregates per (experiment, layer) from the kernel level: per-inference sums. gpu_ns counts
-- every kernel charged to the layer; enclosed_gpu_ns those launched inside its range (what its
-- range's latency can hold); backward_gpu_ns the backward work charged through autograd.
CREATE OR REPLACE TEMP VIEW xsp_layer_gpu AS
SELECT
    experiment, layer_index, layer_name,
    sum(calls_per_inference) AS kernels_per_inference,
    sum(trimmed_mean_ns * calls_per_inference) AS gpu_ns,
    coalesce(sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE layer_rule IS DISTINCT FROM 'autograd'), 0) AS enclosed_gpu_ns,
    coalesce(sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE layer_rule = 'autograd'), 0) AS backward_gpu_ns,
    sum(flops * calls_per_inference) AS flops,
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
WHERE in_inference
GROUP BY experiment, layer_index, layer_name;

-- Roofs: peak FLOP/s and DRAM bytes/s per device (variables override the devices table).
CREATE OR REPLACE TEMP VIEW xsp_device_peaks AS
SELECT
    run_id, device_id, name,
    coalesce(CAST(getvariable('xsp_peak_flops') AS DOUBLE), peak_flops) AS peak_flops,
    coalesce(CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE), peak_dram_bytes_per_s) AS peak_dram_bytes_per_s,
    coalesce(CAST(getvariable('xsp_peak_flops') AS DOUBLE), peak_flops)
        / coalesce(CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE), peak_dram_bytes_per_s) AS ideal_intensity
FROM devices;

-- The roof of each experiment: the device that ran most of its kernel-level GPU time.
CREATE OR REPLACE TEMP VIEW xsp_experiment_roof AS
WITH busiest AS (
    SELECT experiment, arg_max(first_run_id, gpu_ns) AS run_id, arg_max(device_id, gpu_ns) AS device_id
    FROM (SELECT experiment, first_run_id, device_id, sum(total_ns) AS gpu_ns
          FROM xsp_kernel_latency GROUP BY ALL)
    GROUP BY experiment
)
SELECT b.experiment, b.run_id, b.device_id, p.name AS device_name,
       coalesce(p.peak_flops, CAST(getvariable('xsp_peak_flops') AS DOUBLE)) AS peak_flops,
       coalesce(p.peak_dram_bytes_per_s, CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE)) AS peak_dram_bytes_per_s,
       coalesce(p.ideal_intensity, CAST(getvariable('xsp_peak_flops') AS DOUBLE)
                                   / CAST(getvariable('xsp_peak_dram_bytes_per_s') AS DOUBLE)) AS ideal_intensity
FROM busiest AS b
LEFT JOIN xsp_device_peaks AS p ON p.run_id = b.run_id AND p.device_id = b.device_id;

-- Overhead of each level, per run, against the un-instrumented loop of that run's OWN process
-- (capture_latencies): un-instrumented baselines differ between processes by more than the
-- overheads, so only an in-process comparison is the overhead (docs/design.md). Per run:
-- the plain-timer instrumented vs un-instrumented trimmed means (the figure of
-- queries/analyses/capture_level_overhead.sql) and the run's model ranges vs its un-instrumented loop,
-- each with a seeded percentile-bootstrap 95 % interval: xsp_bootstrap_resamples resamples
-- (default 1000) of the iterations, drawn by hash(xsp_bootstrap_seed (default 0), run, resample,
-- draw) so the interval is reproducible; paired by iteration where the loops alternate
-- (phase 'interleaved'), drawn apart otherwise. A run without capture_latencies has NULLs there.
CREATE OR REPLACE TEMP VIEW _xsp_level_loops AS
WITH loops AS (
    SELECT run_id,
           list(latency_ns ORDER BY iteration) FILTER (WHERE loop = 'uninstrumented') AS plain,
           list(latency_ns ORDER BY iteration) FILTER (WHERE loop = 'instrumented') AS timed,
           coalesce(bool_and(phase = 'interleaved') FILTER (WHERE loop = 'uninstrumented'), FALSE) AS interleaved
    FROM capture_latencies
    GROUP BY run_id
), ranges AS (
    SELECT run_id, list(end_ns - start_ns ORDER BY iteration, start_ns) AS model
    FROM _xsp_inferences
    GROUP BY run_id
)
SELECT r.run_id, r.experiment, r.level, r.tool, l.plain, l.timed, l.interleaved, m.model
FROM xsp_runs AS r
LEFT JOIN loops AS l USING (run_id)
LEFT JOIN ranges AS m USING (run_id)
WHERE r.level IN ('M', 'ML', 'MLG');

CREATE OR REPLACE TEMP VIEW _xsp_level_bootstrap AS
WITH draws AS (
    SELECT l.run_id, b.resample, j.draw,
           -- draw j of resample b: one hash per (seed, run, resample, draw); a second one for the
           -- instrumented side unless the loops alternate (then iteration i of both is drawn together)
           hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw) AS h_plain,
           CASE WHEN l.interleaved THEN hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw)
                ELSE hash(coalesce(getvariable('xsp_bootstrap_seed'), 0), l.run_id, b.resample, j.draw, 'instrumented') END AS h_timed,
           l.plain, l.timed, l.model
    FROM _xsp_level_loops AS l
    CROSS JOIN (SELECT range AS resample FROM range(CAST(coalesce(getvariable('xsp_bootstrap_resamples'), 1000) AS BIGINT))) AS b
    CROSS JOIN LATERAL (SELECT unnest(range(CAST(greatest(len(l.plain), len(l.timed), coalesce(len(l.model), 0)) AS BIGINT))) AS draw) AS j
    WHERE len(l.plain) > 0 AND len(l.timed) > 0
), resampled AS (
    SELECT run_id, resample,
           xsp_trimmed_mean(list(plain[CAST(h_plain % len(plain) AS BIGINT) + 1]) FILTER (WHERE draw < len(plain))) AS plain_ns,
           xsp_trimmed_mean(list(timed[CAST(h_timed % len(timed) AS BIGINT) + 1]) FILTER (WHERE draw < len(timed))) AS timed_ns,
           xsp_trimmed_mean(list(model[CAST(h_timed % len(model) AS BIGINT) + 1]) FILTER (WHERE draw < len(model))) AS model_ns
    FROM draws
    GROUP BY run_id, resample
)
SELECT run_id,
       quantile_cont(100.0 * (timed_ns - plain_ns) / plain_ns, 0.025) AS overhead_pct_low,
       quantile_cont(100.0 * (timed_ns - plain_ns) / plain_ns, 0.975) AS overhead_pct_high,
       quantile_cont(100.0 * (model_ns - plain_ns) / plain_ns, 0.025) AS model_overhead_pct_low,
       quantile_cont(100.0 * (model_ns - plain_ns) / plain_ns, 0.975) AS model_overhead_pct_high
FROM resampled
GROUP BY run_id;

CREATE OR REPLACE TEMP VIEW xsp_level_overhead AS
WITH per_run AS (
    SELECT l.run_id, l.experiment, l.level, l.tool, l.interleaved,
           CASE l.level WHEN 'M' THEN 1 WHEN 'ML' THEN 2 ELSE 3 END AS rank,
           len(l.model) AS samples,
           xsp_trimmed_mean(l.plain) AS uninstrumented_ns,
           xsp_trimmed_mean(l.timed) AS instrumented_ns,
           xsp_trimmed_mean(l.model) AS model_ns
    FROM _xsp_level_loops AS l
)
SELECT
    p.experiment, p.level, p.tool, p.run_id, p.samples, p.interleaved,
    p.uninstrumented_ns, p.instrumented_ns, p.model_ns,
    p.instrumented_ns - p.uninstrumented_ns AS overhead_ns,
    100.0 * (p.instrumented_ns - p.uninstrumented_ns) / p.uninstrumented_ns AS overhead_pct,
    b.overhead_pct_low, b.overhead_pct_high,
    100.0 * (p.model_ns - p.uninstrumented_ns) / p.uninstrumented_ns AS model_overhead_pct,
    b.model_overhead_pct_low, b.model_overhead_pct_high,
    lag(p.level) OVER w AS cross_process_previous_level,
    100.0 * (p.model_ns - lag(p.model_ns) OVER w) / lag(p.model_ns) OVER w AS cross_process_overhead_pct
FROM per_run AS p
LEFT JOIN _xsp_level_bootstrap AS b USING (run_id)
WINDOW w AS (PARTITION BY p.experiment, p.tool ORDER BY p.rank, p.run_id);

-- Kernel aggregates per (experiment, kernel name): per-inference sums over its stable keys, and
-- the totals over every instance in the kernel-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_kernel_by_name AS
SELECT
    experiment, name,
    sum(calls_per_inference) AS calls_per_inference,
    sum(samples) AS instances,
    sum(total_ns) AS total_ns,
    sum(trimmed_mean_ns * calls_per_inference) AS latency_ns,
    sum(flops * calls_per_inference) AS flops,
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
GROUP BY experiment, name;

-- GPU aggregates per experiment (all kernels of one inference).
CREATE OR REPLACE TEMP VIEW xsp_model_gpu AS
SELECT
    experiment,
    sum(calls_per_inference) AS kernels_per_inference,
    sum(trimmed_mean_ns * calls_per_inference) AS gpu_ns,
    sum(flops * calls_per_inference) AS flops,
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
WHERE in_inference
GROUP BY experiment;

-- Roofline arithmetic. Arithmetic intensity = FLOPs / DRAM bytes (read + write).
CREATE OR REPLACE TEMP MACRO xsp_intensity(flops, read_bytes, write_bytes) AS
    flops / nullif(coalesce(read_bytes, 0) + coalesce(write_bytes, 0), 0);
-- Memory-bound <=> intensity below the device's ideal intensity (peak FLOP/s / peak bytes/s).
CREATE OR REPLACE TEMP MACRO xsp_memory_bound(intensity, ideal_intensity) AS intensity < ideal_intensity;
-- Attainable FLOP/s under the roof at a given intensity.
CREATE OR REPLACE TEMP MACRO xsp_attainable_flops(intensity, peak_flops, peak_bytes_per_s) AS
    least(peak_flops, intensity * peak_bytes_per_s);

-- ---------------------------------------------------------------------------------------------
-- GPU work classes: communication, computation, memory (xsp_trace/formats/collectives.py; the
-- session sets the patterns). The split, overlap and collective analyses read these.

-- Class of a GPU span: communication (NCCL/RCCL kernels), memory (memcpy/memset), computation
-- (other kernels), other (kernels HTA leaves out: names with Memcpy or Sync; sync spans).
CREATE OR REPLACE TEMP MACRO xsp_gpu_work_class(kind, name) AS
    CASE
        WHEN kind IN ('memcpy', 'memset') THEN 'memory'
        WHEN kind <> 'kernel' THEN 'other'
        WHEN regexp_matches(name, getvariable('xsp_comm_kernel_pattern')) THEN 'communication'
        WHEN regexp_matches(name, getvariable('xsp_not_compute_kernel_pattern')) THEN 'other'
        ELSE 'computation'
    END;

-- Every GPU kernel / copy / set with its class.
CREATE OR REPLACE TEMP VIEW xsp_gpu_work AS
SELECT run_id, span_id, device_id, stream_id, kind, name, start_ns, end_ns, xsp_gpu_work_class(kind, name) AS work_class
FROM spans
WHERE kind IN ('kernel', 'memcpy', 'memset');

-- The union of each class's intervals per GPU: maximal busy stretches (touching ones merged).
CREATE OR REPLACE TEMP VIEW _xsp_gpu_class_intervals AS
WITH ordered AS (
    SELECT run_id, device_id, work_class, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY run_id, device_id, work_class ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM xsp_gpu_work WHERE work_class <> 'other'
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id, work_class ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT run_id, device_id, work_class, min(start_ns) AS start_ns, max(end_ns) AS end_ns
FROM islands GROUP BY run_id, device_id, work_class, island;

-- Bit of each class in a state mask (computation 1, communication 2, memory 4; HTA's order).
CREATE OR REPLACE TEMP VIEW _xsp_gpu_class_bits AS
SELECT * FROM (VALUES ('computation', 1), ('communication', 2), ('memory', 4)) AS t(work_class, bit);

-- The GPU timeline of each device cut where any class starts or stops: every stretch with the
-- set of classes running in it (state: bit mask; 0 never appears -- idle stretches are left out).
CREATE OR REPLACE TEMP VIEW xsp_gpu_class_segments AS
WITH edges AS (
    SELECT i.run_id, i.device_id, i.start_ns AS t, b.bit AS delta
    FROM _xsp_gpu_class_intervals AS i JOIN _xsp_gpu_class_bits AS b USING (work_class)
    UNION ALL
    SELECT i.run_id, i.device_id, i.end_ns, -b.bit
    FROM _xsp_gpu_class_intervals AS i JOIN _xsp_gpu_class_bits AS b USING (work_class)
), running AS (
    SELECT run_id, device_id, t,
           sum(delta) OVER w AS state,
           lead(t) OVER w AS next_t
    FROM edges
    WINDOW w AS (PARTITION BY run_id, device_id ORDER BY t, delta ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT run_id, device_id, t AS start_ns, next_t AS end_ns, CAST(state AS INTEGER) AS state,
       -- e.g. 'computation', 'computation+communication' (HTA: COMPUTATION overlapping COMMUNICATION).
       array_to_string(list_filter(['computation', 'communication', 'memory'],
                                   lambda c, i: (CAST(state AS INTEGER) >> (i - 1)) & 1 = 1), '+') AS classes
FROM running
WHERE state > 0 AND next_t > t;

-- ---------------------------------------------------------------------------------------------
-- Why the GPU is idle: busy stretches, idle gaps, synchronising calls (xsp_trace/formats/cuda_api.py).

-- Every GPU's busy stretches: the union of its kernels, copies and sets over all streams.
CREATE OR REPLACE TEMP VIEW xsp_gpu_busy_intervals AS
WITH ordered AS (
    SELECT run_id, device_id, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM xsp_gpu_work
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT run_id, device_id, min(start_ns) AS start_ns, max(end_ns) AS end_ns
FROM islands GROUP BY run_id, device_id, island;

-- By name alone: 'explicit' for calls that wait for the GPU (cudaDeviceSynchronize,
-- cudaStreamSynchronize, ...), 'implicit' for calls that wait as a side effect (cudaMemcpy, cudaFree,
-- ...), NULL otherwise. Async copies that block (pageable memory) need the copy: xsp_cpu_calls.
CREATE OR REPLACE TEMP MACRO xsp_sync_call_kind(kind, name) AS
    CASE
        WHEN kind <> 'api' THEN NULL
        WHEN regexp_matches(name, getvariable('xsp_explicit_sync_api')) THEN 'explicit'
        WHEN regexp_matches(name, getvariable('xsp_implicit_sync_api')) THEN 'implicit'
    END;

-- The CPU-time taxonomy (xsp_trace/formats/cuda_api.py): what a CPU thread was waiting for at each
-- instant -- 'launch' (inside a call that launched GPU work and returned without waiting), 'sync'
-- (inside a call that blocks: explicit or implicit synchronisation, an async copy to or from
-- pageable memory), 'host' (inside any other recorded span: framework ops, Python, data loading,
-- other API calls), 'idle' (inside no span). Every analysis that splits CPU time reads these views.

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
SELECT run_id, span_id, pid, tid, name, start_ns, end_ns,
       CASE WHEN wait_kind IS NOT NULL THEN 'sync' WHEN launched_work THEN 'launch' ELSE 'host' END AS cpu_class,
       wait_kind, copy_kind, copy_endpoints, bytes
FROM classified;

-- The framework op a call comes from: the outermost op (kind 'op') enclosing it, e.g. aten::to
-- for the cudaMemcpyAsync under aten::to > aten::_to_copy > aten::copy_ (NULL: none recorded),
-- without per-instance suffixes (", op_id = 12": xsp_normalized_name from xsp_trace/naming.py).
CREATE OR REPLACE TEMP MACRO xsp_call_origin(call_run_id, call_span_id) AS (
    SELECT xsp_normalized_name(arg_max(o.name, a.distance))
    FROM span_ancestors AS a JOIN spans AS o ON o.run_id = a.run_id AND o.span_id = a.ancestor_id
    WHERE a.run_id = call_run_id AND a.span_id = call_span_id AND o.kind = 'op'
);

-- Per step and CPU thread of the step's process: its time in the step window split into the four
-- classes (launch + sync + host + idle = the window). The step range and the ranges enclosing it
-- are the window itself, not work in it; spans are clipped to the window; one row for the step's
-- own thread (step_thread) even when nothing else ran on it.
CREATE OR REPLACE TEMP VIEW xsp_step_cpu_time AS
WITH windows AS (
    SELECT st.run_id, st.step_span_id, st.iteration, st.start_ns, st.end_ns, s.pid, s.tid AS step_tid
    FROM steps AS st JOIN spans AS s ON s.run_id = st.run_id AND s.span_id = st.step_span_id
), frame AS (
    SELECT run_id, step_span_id AS span_id FROM steps
    UNION
    SELECT a.run_id, a.ancestor_id FROM span_ancestors AS a JOIN steps AS st ON st.run_id = a.run_id AND st.step_span_id = a.span_id
), cpu AS (
    SELECT w.run_id, w.step_span_id, s.tid, s.span_id, s.kind,
           greatest(s.start_ns, w.start_ns) AS lo, least(s.end_ns, w.end_ns) AS hi
    FROM windows AS w
    JOIN spans AS s ON s.run_id = w.run_id AND s.pid = w.pid AND s.start_ns < w.end_ns AND s.end_ns > w.start_ns
    WHERE s.tid IS NOT NULL AND s.kind IN ('model', 'layer', 'op', 'annotation', 'api', 'other')
      AND NOT EXISTS (SELECT 1 FROM frame AS f WHERE f.run_id = s.run_id AND f.span_id = s.span_id)
), ordered AS (
    SELECT *, max(hi) OVER (PARTITION BY run_id, step_span_id, tid ORDER BY lo, hi
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM cpu
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR lo > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, step_span_id, tid ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
), covered AS (
    SELECT run_id, step_span_id, tid, sum(hi - lo) AS covered_ns
    FROM (SELECT run_id, step_span_id, tid, island, min(lo) AS lo, max(hi) AS hi FROM islands GROUP BY ALL)
    GROUP BY ALL
), calls AS (
    SELECT c.run_id, c.step_span_id, c.tid,
           coalesce(sum(c.hi - c.lo) FILTER (WHERE k.cpu_class = 'launch'), 0) AS launch_ns,
           coalesce(sum(c.hi - c.lo) FILTER (WHERE k.cpu_class = 'sync'), 0) AS sync_ns
    FROM cpu AS c JOIN xsp_cpu_calls AS k ON k.run_id = c.run_id AND k.span_id = c.span_id
    GROUP BY ALL
), threads AS (
    SELECT run_id, step_span_id, tid FROM covered
    UNION
    SELECT run_id, step_span_id, step_tid FROM windows
)
SELECT w.run_id, w.step_span_id, w.iteration, w.pid, t.tid, t.tid IS NOT DISTINCT FROM w.step_tid AS step_thread,
       w.end_ns - w.start_ns AS window_ns,
       coalesce(k.launch_ns, 0) AS launch_ns,
       coalesce(k.sync_ns, 0) AS sync_ns,
       coalesce(c.covered_ns, 0) - coalesce(k.launch_ns, 0) - coalesce(k.sync_ns, 0) AS host_ns,
       w.end_ns - w.start_ns - coalesce(c.covered_ns, 0) AS idle_ns
FROM threads AS t
JOIN windows AS w ON w.run_id = t.run_id AND w.step_span_id = t.step_span_id
LEFT JOIN covered AS c ON c.run_id = t.run_id AND c.step_span_id = t.step_span_id AND c.tid IS NOT DISTINCT FROM t.tid
LEFT JOIN calls AS k ON k.run_id = t.run_id AND k.step_span_id = t.step_span_id AND k.tid IS NOT DISTINCT FROM t.tid;

-- The name nsys 2022.4 gives the memory operations of (kind, copy_kind) in its memory reports
-- (_xsp_memop_operations, loaded from xsp_trace/formats/nsys_stats.py), or "[kind copy_kind]" for
-- a pair it has no name for. One name per pair. Read by analyses/cuda_gpu_mem_time_sum.sql and
-- analyses/cuda_gpu_mem_size_sum.sql.
CREATE OR REPLACE TEMP MACRO _xsp_memop_operation(op_kind, op_copy_kind) AS coalesce(
    (SELECT o.operation FROM _xsp_memop_operations AS o WHERE o.kind = op_kind AND o.copy_kind IS NOT DISTINCT FROM op_copy_kind),
    '[' || op_kind || ' ' || coalesce(op_copy_kind, '?') || ']'
);

-- x rounded to 1 decimal as `nsys stats` prints it: SQLite's round(x, 1), which adds 0.05 and a
-- nudge of x * 3e-16, then truncates (xsp_trace/formats/nsys_stats.py), so exact .x5 ties and
-- doubles just below them round up (DuckDB's round(x, 1) rounds 1234.45, stored as 1234.4499..., down).
-- Read by the nsys-stats summaries (analyses/cuda_*_sum.sql, nvtx_sum, osrt_sum, kernel_launch_stats).
CREATE OR REPLACE TEMP MACRO _xsp_nsys_round(x) AS CASE
    WHEN abs(x) >= getvariable('xsp_sqlite_round_whole_from') THEN x
    -- whole part and fraction apart, both exact, so the nudge is not lost in the whole part's ulp;
    -- the rounder 0.05 + nudge is a double, as SQLite keeps it
    ELSE sign(x) * (floor(abs(x)) * 10 + floor((abs(x) - floor(abs(x))
              + (CAST(0.05 AS DOUBLE) + CASE WHEN abs(x) < getvariable('xsp_sqlite_round_nudge_below')
                                             THEN abs(x) * getvariable('xsp_sqlite_round_nudge') ELSE 0 END)) * 10)) / 10
END;
-- part's share of whole in percent, computed and rounded as `nsys stats` does (part * 100.0 / whole).
CREATE OR REPLACE TEMP MACRO _xsp_nsys_pct(part, whole) AS
    _xsp_nsys_round(CAST(part AS DOUBLE) * CAST(100 AS DOUBLE) / CAST(whole AS DOUBLE));

-- Duration statistics of CPU calls per run and function, as `nsys stats` computes them (median of an
-- even count = mean of the two middle values; sample standard deviation), of the spans of one kind
-- and, where `wanted_category` is not NULL, one category: ('api', NULL) for CUDA/HIP API calls,
-- ('other', the OS runtime category from xsp_trace/formats/nsys_export.py) for OS runtime calls.
-- Read by analyses/cuda_api_sum.sql and analyses/osrt_sum.sql. A table macro, not a view over
-- both families: the plain kind filter lets the scan skip the row groups of other kinds.
CREATE OR REPLACE TEMP MACRO _xsp_call_stats(wanted_kind, wanted_category) AS TABLE
SELECT run_id, name, sum(end_ns - start_ns) AS total_ns, count(*) AS calls, avg(end_ns - start_ns) AS avg_ns,
       median(end_ns - start_ns) AS med_ns, min(end_ns - start_ns) AS min_ns, max(end_ns - start_ns) AS max_ns,
       coalesce(stddev_samp(end_ns - start_ns), 0) AS stddev_ns
FROM spans
WHERE kind = wanted_kind AND (wanted_category IS NULL OR category = wanted_category)
GROUP BY run_id, name;
