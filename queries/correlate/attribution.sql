-- correlate/attribution: the steps of one run, and what every span is charged to across threads.
--
-- From: `spans`, `launches`, `span_args` of run getvariable('xsp_run_id'), after
-- correlate/hierarchy; `_xsp_span_iteration` (span_id, depth, iteration: each span's own iteration,
-- else its nearest ancestor's; xsp_trace.convert.correlate.inherit_down); the TEMP macro xsp_phase_of(name) over xsp_trace.naming PHASE_RULES; variables xsp_arg_sequence_number and xsp_arg_fwd_thread_id (the Kineto arg
-- names, xsp_trace/formats/kineto_fields.py).
-- Computes:
--   * `steps`: model ranges on CPU threads (unless xsp_model_ranges_are_steps is false: `convert
--     --step-ranges` names the steps), else the outermost CPU ranges carrying an iteration
--     (correlate/step_ranges: ProfilerStep#N in any category, or the ranges --step-ranges names),
--     one per iteration and process. GPU copies of a range (tid NULL) never become steps.
--   * `spans.iteration` of spans without one: the nearest ancestor's; else a CPU span takes the
--     iteration of the step whose window (same process, any thread) holds its start -- so the
--     autograd thread's backward ops belong to the step that ran loss.backward(); a GPU span takes
--     the iteration of the API call that launched it.
--   * `_xsp_own_attribution`: what each span marks itself, for correlate/attribution_insert.

INSERT INTO steps (run_id, step_span_id, iteration, pid, tid, start_ns, end_ns, source)
WITH model_ranges AS (
    SELECT s.span_id, i.iteration, s.pid, s.tid, s.start_ns, s.end_ns, 'model range' AS source
    FROM spans AS s
    LEFT JOIN _xsp_span_iteration AS i ON i.span_id = s.span_id
    WHERE s.run_id = getvariable('xsp_run_id') AND s.kind = 'model' AND s.tid IS NOT NULL
      AND getvariable('xsp_model_ranges_are_steps')
), iteration_ranges AS (
    SELECT s.span_id, i.iteration, s.pid, s.tid, s.start_ns, s.end_ns, 'iteration range' AS source
    FROM spans AS s
    JOIN _xsp_span_iteration AS i ON i.span_id = s.span_id
    LEFT JOIN _xsp_span_iteration AS p ON p.span_id = s.parent_id
    WHERE s.run_id = getvariable('xsp_run_id') AND s.tid IS NOT NULL
      AND s.kind IN ('annotation', 'op', 'layer')
      AND p.iteration IS DISTINCT FROM i.iteration
      AND NOT EXISTS (SELECT 1 FROM model_ranges)
    -- One step per iteration and process: a copy of the range on another thread is not a second step.
    QUALIFY row_number() OVER (PARTITION BY s.pid, i.iteration ORDER BY s.start_ns, s.end_ns DESC, s.span_id) = 1
)
SELECT getvariable('xsp_run_id'), span_id, iteration, pid, tid, start_ns, end_ns, source
FROM (SELECT * FROM model_ranges UNION ALL SELECT * FROM iteration_ranges);

-- The step of every CPU span: the window of its process holding its start, the one on its own
-- thread first (the step it is nested in), else the latest-starting one, should windows overlap.
-- Steps are few, spans many: the windows of a process are cut at every window start and end into
-- segments, each held by one fixed set of windows, and the answer is worked out per segment; a span
-- then finds its segment by an ASOF join on its start. (A range join of every span with the windows
-- plus an aggregate per span needed memory growing with the trace: BENCHMARKS.md, "Correlation and memory".)
CREATE OR REPLACE TEMP TABLE _xsp_run_steps AS
SELECT step_span_id, pid, tid, start_ns, end_ns FROM steps WHERE run_id = getvariable('xsp_run_id');

-- Every segment start `at` of a process, with the latest-starting window holding it on any thread
-- (NULL in gaps and after the last window, so that spans there find no step).
CREATE OR REPLACE TEMP TABLE _xsp_step_any AS
WITH bounds AS (
    SELECT pid, start_ns AS at FROM _xsp_run_steps
    UNION
    SELECT pid, end_ns AS at FROM _xsp_run_steps
)
SELECT b.pid, b.at, arg_max(st.step_span_id, (st.start_ns, st.step_span_id)) AS step_span_id
FROM bounds AS b
LEFT JOIN _xsp_run_steps AS st ON st.pid = b.pid AND st.start_ns <= b.at AND b.at < st.end_ns
GROUP BY b.pid, b.at;

-- The latest-starting window holding each segment start on each thread that has one.
CREATE OR REPLACE TEMP TABLE _xsp_step_own AS
SELECT a.pid, a.at, st.tid, arg_max(st.step_span_id, (st.start_ns, st.step_span_id)) AS step_span_id
FROM _xsp_step_any AS a
JOIN _xsp_run_steps AS st ON st.pid = a.pid AND st.start_ns <= a.at AND a.at < st.end_ns
GROUP BY a.pid, a.at, st.tid;

SET VARIABLE xsp_run_has_steps = (SELECT count(*) > 0 FROM _xsp_run_steps);

CREATE OR REPLACE TEMP TABLE _xsp_span_step AS
SELECT span_id, step_span_id FROM (
    SELECT c.span_id, coalesce(o.step_span_id, a.step_span_id) AS step_span_id
    FROM spans AS c
    ASOF JOIN _xsp_step_any AS a ON a.pid = c.pid AND c.start_ns >= a.at
    LEFT JOIN _xsp_step_own AS o ON o.pid = a.pid AND o.at = a.at AND o.tid = c.tid
    WHERE c.run_id = getvariable('xsp_run_id') AND c.tid IS NOT NULL
      -- A constant when planned: without steps (nsys) the ASOF join would still sort every span.
      AND getvariable('xsp_run_has_steps')
)
WHERE step_span_id IS NOT NULL;

-- GPU spans: the step of the API call that launched them.
INSERT INTO _xsp_span_step
SELECT l.gpu_span_id, s.step_span_id
FROM launches AS l
JOIN _xsp_span_step AS s ON s.span_id = l.api_span_id
WHERE l.run_id = getvariable('xsp_run_id');

-- The iteration of every span without one, written in one UPDATE (each UPDATE of the spans table
-- rewrites its rows: separate ones for inherited and step iterations cost twice): the nearest
-- ancestor's, else its step's. In span_id order: an UPDATE in the hash join's order rewrites row
-- groups at random (Kineto's span ids interleave threads).
CREATE OR REPLACE TEMP TABLE _xsp_iteration_fill AS
SELECT coalesce(i.span_id, s.span_id) AS span_id, coalesce(i.iteration, s.iteration) AS iteration
FROM _xsp_span_iteration AS i
FULL JOIN (
    SELECT s.span_id, st.iteration
    FROM _xsp_span_step AS s
    JOIN steps AS st ON st.run_id = getvariable('xsp_run_id') AND st.step_span_id = s.step_span_id
) AS s ON s.span_id = i.span_id
ORDER BY span_id;

UPDATE spans SET iteration = f.iteration
FROM _xsp_iteration_fill AS f
WHERE spans.run_id = getvariable('xsp_run_id') AND spans.span_id = f.span_id
  AND spans.iteration IS NULL AND f.iteration IS NOT NULL;

DROP TABLE _xsp_iteration_fill;
DROP TABLE _xsp_span_iteration;

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

-- Every span of the run with what it marks itself: the phase it names (its own span id) and, for
-- a backward op, the forward op that created its autograd node. Spans inherit both top-down from
-- the nearest self-or-ancestor that has one (xsp_trace.convert.correlate.inherit_down), then
-- correlate/attribution_insert writes `attribution`.
CREATE OR REPLACE TEMP TABLE _xsp_own_attribution AS
SELECT s.span_id, s.parent_id, s.depth, m.span_id AS phase_span_id, bf.forward_span_id
FROM spans AS s
LEFT JOIN _xsp_phase_marks AS m ON m.span_id = s.span_id
LEFT JOIN _xsp_backward_forward AS bf ON bf.span_id = s.span_id
WHERE s.run_id = getvariable('xsp_run_id');
