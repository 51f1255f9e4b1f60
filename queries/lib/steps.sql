-- lib/steps: per step and CPU thread of the step's process, its time in the step split into the
-- CPU-time classes launch, sync, host and idle.
-- include: lib/sync
--
-- From: steps, spans, span_ancestors, and the API calls' classes (lib/sync).

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
SELECT
    -- Run.
    w.run_id,
    -- The step (steps.step_span_id).
    w.step_span_id,
    -- Its iteration (step number).
    w.iteration,
    -- The step's process.
    w.pid,
    -- A CPU thread of that process.
    t.tid,
    -- Whether it is the thread the step range is on.
    t.tid IS NOT DISTINCT FROM w.step_tid AS step_thread,
    -- The step's duration, ns (launch + sync + host + idle).
    w.end_ns - w.start_ns AS window_ns,
    -- Time inside calls that launched GPU work without waiting, ns.
    coalesce(k.launch_ns, 0) AS launch_ns,
    -- Time inside calls that waited for the GPU, ns.
    coalesce(k.sync_ns, 0) AS sync_ns,
    -- Time inside any other recorded span, ns.
    coalesce(c.covered_ns, 0) - coalesce(k.launch_ns, 0) - coalesce(k.sync_ns, 0) AS host_ns,
    -- Time inside no span, ns.
    w.end_ns - w.start_ns - coalesce(c.covered_ns, 0) AS idle_ns
FROM threads AS t
JOIN windows AS w ON w.run_id = t.run_id AND w.step_span_id = t.step_span_id
LEFT JOIN covered AS c ON c.run_id = t.run_id AND c.step_span_id = t.step_span_id AND c.tid IS NOT DISTINCT FROM t.tid
LEFT JOIN calls AS k ON k.run_id = t.run_id AND k.step_span_id = t.step_span_id AND k.tid IS NOT DISTINCT FROM t.tid;
