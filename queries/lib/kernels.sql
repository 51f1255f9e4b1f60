-- lib/kernels: every kernel with its stable key (layer call, ordinal within it), kernel latency per
-- key over the kernel-level source runs with its hardware metrics, and the per-layer, per-name and
-- per-model GPU aggregates built over it.
-- include: lib/stats, lib/experiments, lib/layers
--
-- From: spans (kind 'kernel' and the API calls that launched them), attribution, metrics (the
-- derived metric names in variables from xsp_trace/formats/ncu_metrics.py).

-- Every kernel of every run with its stable key: its layer call (above), ordinal within it
-- (launch order), the step it was launched in (whatever the launching thread) and its phase.
CREATE OR REPLACE TEMP VIEW xsp_kernel_calls AS
WITH with_inferences AS (
    SELECT DISTINCT run_id FROM xsp_inferences
), k AS (
    SELECT
        k.run_id, k.span_id, k.name, k.device_id, k.stream_id, k.iteration, k.start_ns, k.end_ns,
        sl.layer_span_id, sl.layer_rule, lc.layer_index, lc.layer_name, lc.layer_call, att.phase,
        coalesce(api.start_ns, k.start_ns) AS launch_ns,
        (k.iteration IS NOT NULL OR k.run_id NOT IN (SELECT run_id FROM with_inferences)) AS in_inference
    FROM spans AS k
    LEFT JOIN xsp_span_layer AS sl ON sl.run_id = k.run_id AND sl.span_id = k.span_id
    LEFT JOIN xsp_layer_calls AS lc ON lc.run_id = k.run_id AND lc.span_id = sl.layer_span_id
    LEFT JOIN attribution AS att ON att.run_id = k.run_id AND att.span_id = k.span_id
    LEFT JOIN spans AS api ON api.run_id = k.run_id AND api.span_id = k.parent_id
    WHERE k.kind = 'kernel'
)
SELECT
    -- Run.
    run_id,
    -- The kernel span.
    span_id,
    -- Kernel name.
    name,
    -- GPU.
    device_id,
    -- Stream.
    stream_id,
    -- Its iteration (NULL: outside every inference).
    iteration,
    -- Start, ns on the run clock.
    start_ns,
    -- End, ns.
    end_ns,
    -- The layer call it is charged to (xsp_span_layer), NULL outside every layer.
    layer_span_id,
    -- How: 'enclosing' or 'autograd'.
    layer_rule,
    -- That layer's index.
    layer_index,
    -- Its name.
    layer_name,
    -- The call of that layer within the inference.
    layer_call,
    -- Phase of the step it was launched in (attribution.phase).
    phase,
    -- Start of the call that launched it (its own start without one), ns.
    launch_ns,
    -- Whether it belongs to an inference (a run without inferences: every kernel).
    in_inference,
    -- Ordinal within its layer call, in launch order.
    row_number() OVER (PARTITION BY run_id, iteration, layer_span_id ORDER BY launch_ns, start_ns, span_id) - 1 AS ordinal,
    -- Duration, ns.
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
JOIN xsp_kernel_calls AS c USING (run_id, span_id)
JOIN xsp_runs AS r USING (run_id)
GROUP BY ALL;

-- Kernel latency per stable key over the inferences of the kernel-level source runs, with metrics.
CREATE OR REPLACE TEMP VIEW xsp_kernel_latency AS
WITH keyed AS (
    SELECT s.experiment, s.level, s.corrected, c.*
    FROM xsp_source_runs AS s
    JOIN xsp_kernel_calls AS c USING (run_id)
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
    -- The experiment.
    st.experiment,
    -- The kernel-level source runs' level (NULL: a plain trace).
    st.level,
    -- Whether that level is corrected (measured without lower levels' overhead).
    st.corrected,
    -- Stable key: the layer (index, name) and call of the layer within the inference (NULL: no layer) ...
    st.layer_index,
    -- ... layer name ...
    st.layer_name,
    -- ... call of the layer ...
    st.layer_call,
    -- ... the kernel's ordinal within that layer call (launch order) ...
    st.ordinal,
    -- ... and its name.
    st.name,
    -- Whether it ran inside an inference (step) or outside every one.
    st.in_inference,
    -- 'enclosing': launched inside the layer range; 'autograd': backward work of the layer's forward op.
    st.layer_rule,
    -- The GPU it ran on most.
    st.device_id,
    -- Instances measured.
    st.samples,
    -- Trimmed mean duration, ns (xsp_trimmed_mean).
    st.trimmed_mean_ns,
    -- Median duration, ns.
    st.median_ns,
    -- 90th percentile, ns.
    st.p90_ns,
    -- Total over every instance, ns.
    st.total_ns,
    -- The first run it was measured in.
    st.first_run_id,
    -- Instances per inference (0 outside inferences).
    CASE WHEN st.in_inference THEN st.samples / n.inferences ELSE 0 END AS calls_per_inference,
    -- FLOPs per instance, from the metric runs (NULL without metrics).
    m.flops,
    -- DRAM bytes read per instance.
    m.dram_read_bytes,
    -- DRAM bytes written per instance.
    m.dram_write_bytes,
    -- Achieved occupancy, %.
    m.achieved_occupancy
FROM stats AS st
JOIN xsp_inference_counts AS n ON n.experiment = st.experiment AND n.measured = 'kernel'
LEFT JOIN _xsp_kernel_key_metrics AS m
    ON m.experiment = st.experiment AND m.name = st.name AND m.ordinal = st.ordinal
   AND m.in_inference = st.in_inference
   AND m.layer_index IS NOT DISTINCT FROM st.layer_index AND m.layer_name IS NOT DISTINCT FROM st.layer_name
   AND m.layer_call IS NOT DISTINCT FROM st.layer_call;

-- Kernel aggregates per (experiment, kernel name): per-inference sums over its stable keys, and
-- the totals over every instance in the kernel-level source runs.
CREATE OR REPLACE TEMP VIEW xsp_kernel_by_name AS
SELECT
    -- The experiment.
    experiment,
    -- Kernel name.
    name,
    -- Launches per inference.
    sum(calls_per_inference) AS calls_per_inference,
    -- Instances measured.
    sum(samples) AS instances,
    -- Total over every instance, ns.
    sum(total_ns) AS total_ns,
    -- GPU time per inference, ns (trimmed means).
    sum(trimmed_mean_ns * calls_per_inference) AS latency_ns,
    -- FLOPs per inference.
    sum(flops * calls_per_inference) AS flops,
    -- DRAM bytes read per inference.
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    -- DRAM bytes written per inference.
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    -- Achieved occupancy weighted by time, %.
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
GROUP BY experiment, name;

-- GPU aggregates per (experiment, layer) from the kernel level: per-inference sums. gpu_ns counts
-- every kernel charged to the layer; enclosed_gpu_ns those launched inside its range (what its
-- range's latency can hold); backward_gpu_ns the backward work charged through autograd.
CREATE OR REPLACE TEMP VIEW xsp_layer_gpu AS
SELECT
    -- The experiment.
    experiment,
    -- Layer index.
    layer_index,
    -- Layer name.
    layer_name,
    -- Kernels per inference charged to the layer.
    sum(calls_per_inference) AS kernels_per_inference,
    -- Their GPU time per inference, ns.
    sum(trimmed_mean_ns * calls_per_inference) AS gpu_ns,
    -- Of it, kernels launched inside the layer's range, ns.
    coalesce(sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE layer_rule IS DISTINCT FROM 'autograd'), 0) AS enclosed_gpu_ns,
    -- Of it, backward work charged through autograd, ns.
    coalesce(sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE layer_rule = 'autograd'), 0) AS backward_gpu_ns,
    -- FLOPs per inference.
    sum(flops * calls_per_inference) AS flops,
    -- DRAM bytes read per inference.
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    -- DRAM bytes written per inference.
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    -- Achieved occupancy weighted by time, %.
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
WHERE in_inference
GROUP BY experiment, layer_index, layer_name;

-- GPU aggregates per experiment (all kernels of one inference).
CREATE OR REPLACE TEMP VIEW xsp_model_gpu AS
SELECT
    -- The experiment.
    experiment,
    -- Kernels per inference.
    sum(calls_per_inference) AS kernels_per_inference,
    -- GPU time per inference, ns.
    sum(trimmed_mean_ns * calls_per_inference) AS gpu_ns,
    -- FLOPs per inference.
    sum(flops * calls_per_inference) AS flops,
    -- DRAM bytes read per inference.
    sum(dram_read_bytes * calls_per_inference) AS dram_read_bytes,
    -- DRAM bytes written per inference.
    sum(dram_write_bytes * calls_per_inference) AS dram_write_bytes,
    -- Achieved occupancy weighted by time, %.
    sum(achieved_occupancy * trimmed_mean_ns * calls_per_inference)
        / sum(trimmed_mean_ns * calls_per_inference) FILTER (WHERE achieved_occupancy IS NOT NULL) AS achieved_occupancy
FROM xsp_kernel_latency
WHERE in_inference
GROUP BY experiment;
