-- lib/experiments: runs grouped into experiments, the inferences (steps) of every run, and which
-- run level each measured level of an experiment is taken from (leveled correction).
-- include:
--
-- From: runs, steps, spans; the macro xsp_model_name(name) (xsp_trace/naming.py, installed with
-- these modules: the range-name convention lives there only).
-- Leveled measurement (docs/design.md): an experiment is one (model, batch size) captured at several
-- levels; model latency comes only from its M run, layer latency only from its ML run, kernel
-- latency only from its MLG run, metrics from metric runs. A plain trace (runs.level NULL) is an
-- experiment of its own and serves every level, uncorrected (xsp_level_sources says so).
-- An inference is a model range (else the outermost range that carries an iteration, e.g.
-- ProfilerStep#N); a trace without either is one inference.

-- Every run with its experiment.
CREATE OR REPLACE TEMP VIEW xsp_runs AS
SELECT
    -- Run.
    run_id,
    -- Capture level: M, ML, MLG (xsp-trace capture), NULL for a plain trace.
    level,
    -- Model name and batch size the capture recorded (NULL for a plain trace).
    model,
    -- Batch size.
    batch_size,
    -- What the run was converted from (runs.source_kind) and the profiler (runs.tool).
    source_kind,
    -- Profiler.
    tool,
    -- The experiment: 'model bs=N' for a leveled capture, 'run N' for a plain trace.
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
CREATE OR REPLACE TEMP VIEW xsp_inferences AS
SELECT
    -- Run.
    st.run_id,
    -- The step's span.
    st.step_span_id AS span_id,
    -- Its iteration.
    st.iteration,
    -- Its name.
    s.name,
    -- Start, ns.
    st.start_ns,
    -- End, ns.
    st.end_ns,
    -- What made it a step (steps.source: 'model range', ...).
    st.source
FROM steps AS st
JOIN spans AS s ON s.run_id = st.run_id AND s.span_id = st.step_span_id;

-- One row per experiment: its model name and batch size.
CREATE OR REPLACE TEMP VIEW xsp_experiments AS
SELECT
    -- The experiment (xsp_runs.experiment).
    r.experiment,
    -- Model name: the capture's, else the name of its xsp.model: range.
    coalesce(any_value(r.model), any_value(xsp_model_name(i.name))) AS model,
    -- Batch size.
    any_value(r.batch_size) AS batch_size,
    -- True for a plain trace (no capture levels, uncorrected).
    bool_and(r.level IS NULL) AS plain,
    -- Its runs.
    list(DISTINCT r.run_id ORDER BY r.run_id) AS run_ids
FROM xsp_runs AS r
LEFT JOIN xsp_inferences AS i ON i.run_id = r.run_id AND i.source = 'model range'
GROUP BY r.experiment;

-- The runs each measured level of each experiment is taken from (all runs of the best level).
CREATE OR REPLACE TEMP VIEW xsp_source_runs AS
WITH candidates AS (
    SELECT r.experiment, p.measured, r.run_id, r.level, p.preference, p.corrected
    FROM xsp_runs AS r
    JOIN _xsp_level_preference AS p ON p.level IS NOT DISTINCT FROM r.level
), best AS (
    SELECT experiment, measured, min(preference) AS preference FROM candidates GROUP BY ALL
)
SELECT
    -- The experiment.
    c.experiment,
    -- The measured level: model, layer or kernel.
    c.measured,
    -- A run it is taken from.
    c.run_id,
    -- That run's level (NULL: a plain trace).
    c.level,
    -- Whether it is measured without lower levels' overhead.
    c.corrected
FROM candidates AS c JOIN best USING (experiment, measured, preference);

-- Number of inferences in the source runs of each (experiment, measured level); at least 1.
CREATE OR REPLACE TEMP VIEW xsp_inference_counts AS
SELECT
    -- The experiment.
    s.experiment,
    -- The measured level.
    s.measured,
    -- Inferences in its source runs, at least 1.
    greatest(count(i.span_id), 1) AS inferences,
    -- Whether there is any.
    count(i.span_id) > 0 AS has_inferences
FROM xsp_source_runs AS s
LEFT JOIN xsp_inferences AS i USING (run_id)
GROUP BY ALL;

-- Which run level every measured level of every experiment came from, and whether it is corrected.
CREATE OR REPLACE TEMP VIEW xsp_level_sources AS
SELECT
    -- The experiment.
    s.experiment,
    -- The measured level: model, layer or kernel.
    s.measured,
    -- The run level it is taken from (NULL: a plain trace).
    s.level,
    -- Whether it is measured without the overhead of profiling the levels below.
    s.corrected,
    -- The runs it is taken from.
    list(s.run_id ORDER BY s.run_id) AS run_ids,
    -- Inferences (steps) in those runs, at least 1.
    any_value(c.inferences) AS inferences
FROM xsp_source_runs AS s
JOIN xsp_inference_counts AS c USING (experiment, measured)
GROUP BY s.experiment, s.measured, s.level, s.corrected;
