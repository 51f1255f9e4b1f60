-- correlate/attribution: the steps of one run, and what every span is charged to across threads.
--
-- From: `spans`, `launches`, `span_ancestors`, `span_args` of run getvariable('xsp_run_id'), after
-- correlate_hierarchy; the TEMP macro xsp_phase_of(name) over xsp_trace.naming PHASE_RULES; variables xsp_arg_sequence_number and xsp_arg_fwd_thread_id (the Kineto arg
-- names, xsp_trace/formats/kineto_fields.py).
-- Computes:
--   * `steps`: model ranges on CPU threads, else the outermost CPU ranges carrying an iteration
--     (ProfilerStep#N). GPU copies of a range (tid NULL) never become steps.
--   * `spans.iteration` of spans that did not inherit one on their thread: a CPU span takes the
--     iteration of the step whose window (same process, any thread) holds its start -- so the
--     autograd thread's backward ops belong to the step that ran loss.backward(); a GPU span takes
--     the iteration of the API call that launched it.
--   * `attribution`: step, phase and forward op of every span (see the table's comments).

INSERT INTO steps (run_id, step_span_id, iteration, pid, tid, start_ns, end_ns, source)
WITH model_ranges AS (
    SELECT span_id, iteration, pid, tid, start_ns, end_ns, 'model range' AS source
    FROM spans
    WHERE run_id = getvariable('xsp_run_id') AND kind = 'model' AND tid IS NOT NULL
), iteration_ranges AS (
    SELECT s.span_id, s.iteration, s.pid, s.tid, s.start_ns, s.end_ns, 'iteration range' AS source
    FROM spans AS s
    LEFT JOIN spans AS p ON p.run_id = s.run_id AND p.span_id = s.parent_id
    WHERE s.run_id = getvariable('xsp_run_id') AND s.tid IS NOT NULL
      AND s.iteration IS NOT NULL AND s.kind IN ('annotation', 'op', 'layer')
      AND p.iteration IS DISTINCT FROM s.iteration
      AND NOT EXISTS (SELECT 1 FROM model_ranges)
)
SELECT getvariable('xsp_run_id'), span_id, iteration, pid, tid, start_ns, end_ns, source
FROM (SELECT * FROM model_ranges UNION ALL SELECT * FROM iteration_ranges);

-- The step of every CPU span: the window of its process holding its start, the one on its own
-- thread first (the step it is nested in), else the latest-starting one, should windows overlap.
CREATE OR REPLACE TEMP TABLE _xsp_span_step AS
WITH run_steps AS (
    SELECT * FROM steps WHERE run_id = getvariable('xsp_run_id')
), cpu AS (
    SELECT span_id, pid, tid, start_ns FROM spans
    WHERE run_id = getvariable('xsp_run_id') AND tid IS NOT NULL
)
SELECT c.span_id, arg_max(st.step_span_id, (st.tid = c.tid, st.start_ns)) AS step_span_id
FROM cpu AS c
JOIN run_steps AS st ON st.pid = c.pid AND c.start_ns >= st.start_ns AND c.start_ns < st.end_ns
GROUP BY c.span_id;

-- GPU spans: the step of the API call that launched them.
INSERT INTO _xsp_span_step
SELECT l.gpu_span_id, s.step_span_id
FROM launches AS l
JOIN _xsp_span_step AS s ON s.span_id = l.api_span_id
WHERE l.run_id = getvariable('xsp_run_id');

UPDATE spans SET iteration = st.iteration
FROM _xsp_span_step AS s
JOIN steps AS st ON st.run_id = getvariable('xsp_run_id') AND st.step_span_id = s.step_span_id
WHERE spans.run_id = getvariable('xsp_run_id') AND spans.span_id = s.span_id
  AND spans.iteration IS NULL;

-- The phase each distinct CPU span name names, if any: the patterns run once per name (a run
-- repeats a few thousand names millions of times), in a table of its own so that DuckDB does
-- not push the pattern filter below the DISTINCT, back onto every span.
CREATE OR REPLACE TEMP TABLE _xsp_phase_names AS
SELECT name, xsp_phase_of(name) AS phase
FROM (SELECT DISTINCT name FROM spans WHERE run_id = getvariable('xsp_run_id') AND tid IS NOT NULL);

-- Ranges and ops that name a phase; autograd backward ops by their Fwd thread id arg too.
CREATE OR REPLACE TEMP TABLE _xsp_phase_marks AS
WITH backward_ops AS (
    SELECT DISTINCT span_id FROM span_args
    WHERE run_id = getvariable('xsp_run_id') AND key = getvariable('xsp_arg_fwd_thread_id')
      AND TRY_CAST(value AS BIGINT) > 0
), named_phases AS (
    SELECT name, phase FROM _xsp_phase_names WHERE phase IS NOT NULL
)
SELECT s.span_id, coalesce(n.phase, CASE WHEN b.span_id IS NOT NULL THEN 'backward' END) AS phase
FROM spans AS s
LEFT JOIN named_phases AS n ON n.name = s.name
LEFT JOIN backward_ops AS b ON b.span_id = s.span_id
WHERE s.run_id = getvariable('xsp_run_id') AND s.tid IS NOT NULL
  AND (b.span_id IS NOT NULL OR n.phase IS NOT NULL);

-- Every span with itself (distance 0) and its ancestors: GPU spans reach their launch this way.
CREATE OR REPLACE TEMP VIEW _xsp_self_and_ancestors AS
SELECT span_id, span_id AS ancestor_id, 0 AS distance FROM spans WHERE run_id = getvariable('xsp_run_id')
UNION ALL
SELECT span_id, ancestor_id, distance FROM span_ancestors WHERE run_id = getvariable('xsp_run_id');

CREATE OR REPLACE TEMP TABLE _xsp_span_phase AS
SELECT a.span_id, arg_min(m.phase, a.distance) AS phase, arg_min(m.span_id, a.distance) AS phase_span_id
FROM _xsp_self_and_ancestors AS a
JOIN _xsp_phase_marks AS m ON m.span_id = a.ancestor_id
GROUP BY a.span_id;

-- Backward ops (Fwd thread id > 0) and the forward op that created their autograd node: same
-- process, same sequence number, not itself a backward op, started before; the latest such
-- (sequence numbers grow for the life of a thread, and the innermost op recording a number
-- is the one that created the node).
CREATE OR REPLACE TEMP TABLE _xsp_backward_forward AS
WITH numbered AS (
    SELECT s.span_id, s.pid, s.start_ns, TRY_CAST(q.value AS BIGINT) AS sequence_number,
           coalesce(TRY_CAST(f.value AS BIGINT), 0) > 0 AS is_backward
    FROM spans AS s
    JOIN span_args AS q ON q.run_id = s.run_id AND q.span_id = s.span_id AND q.key = getvariable('xsp_arg_sequence_number')
    LEFT JOIN span_args AS f ON f.run_id = s.run_id AND f.span_id = s.span_id AND f.key = getvariable('xsp_arg_fwd_thread_id')
    WHERE s.run_id = getvariable('xsp_run_id') AND s.tid IS NOT NULL
)
SELECT b.span_id, arg_max(f.span_id, (f.start_ns, f.span_id)) AS forward_span_id
FROM numbered AS b
JOIN numbered AS f
  ON f.pid = b.pid AND f.sequence_number = b.sequence_number AND NOT f.is_backward AND f.start_ns <= b.start_ns
WHERE b.is_backward AND b.sequence_number >= 0
GROUP BY b.span_id;

CREATE OR REPLACE TEMP TABLE _xsp_span_forward AS
SELECT a.span_id, arg_min(bf.forward_span_id, a.distance) AS forward_span_id
FROM _xsp_self_and_ancestors AS a
JOIN _xsp_backward_forward AS bf ON bf.span_id = a.ancestor_id
GROUP BY a.span_id;

INSERT INTO attribution (run_id, span_id, step_span_id, phase, phase_span_id, forward_span_id)
SELECT
    s.run_id,
    s.span_id,
    st.step_span_id,
    p.phase,
    p.phase_span_id,
    f.forward_span_id
FROM spans AS s
LEFT JOIN _xsp_span_step AS st ON st.span_id = s.span_id
LEFT JOIN _xsp_span_phase AS p ON p.span_id = s.span_id
LEFT JOIN _xsp_span_forward AS f ON f.span_id = s.span_id
WHERE s.run_id = getvariable('xsp_run_id');

DROP TABLE _xsp_span_step;
DROP TABLE _xsp_phase_names;
DROP TABLE _xsp_phase_marks;
DROP TABLE _xsp_span_phase;
DROP TABLE _xsp_backward_forward;
DROP TABLE _xsp_span_forward;
DROP VIEW _xsp_self_and_ancestors;
