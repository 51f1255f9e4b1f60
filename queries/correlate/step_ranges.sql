-- correlate/step_ranges: the iteration of every range that names a step, the same for every format.
--
-- From: `spans` of run getvariable('xsp_run_id'), before correlate/hierarchy (no span has an
-- iteration yet), and the variables set by xsp_trace.convert.step_ranges: xsp_step_pattern (a regular
-- expression over range names: ProfilerStep#N, else `convert --step-ranges REGEX`),
-- xsp_step_name_prefix (what every name it matches starts with, '' if unknown) and
-- xsp_step_range_kinds (the kinds that are ranges).
-- Computes: `spans.iteration` of the ranges whose name matches, whatever their category (a Kineto
-- annotation or operator, an NVTX range). A step is a matching CPU range that does not lie inside
-- an earlier matching one of its process; the matching ranges inside it (ProfilerStep#N recorded
-- twice, as an annotation and as an operator) are the same step. Its iteration is the first
-- integer of its name when every step has one and no two steps of a process share it, else its
-- order in its process from 0. GPU copies of a range (tid NULL) take their name's number when
-- numbers are used. xsp_step_ranges_found: the number of steps.

-- The names that match, each with its first integer (the pattern runs once per distinct name; the
-- prefix test first spares the DISTINCT the millions of other spans).
CREATE OR REPLACE TEMP TABLE _xsp_step_names AS
SELECT name, TRY_CAST(nullif(regexp_extract(name, '[0-9]+'), '') AS INTEGER) AS number
FROM (
    SELECT DISTINCT name FROM spans
    WHERE run_id = getvariable('xsp_run_id') AND list_contains(getvariable('xsp_step_range_kinds'), kind)
      AND starts_with(name, getvariable('xsp_step_name_prefix'))
)
WHERE regexp_matches(name, getvariable('xsp_step_pattern'));

CREATE OR REPLACE TEMP TABLE _xsp_step_matches AS
SELECT s.span_id, s.pid, s.tid, s.start_ns, s.end_ns, n.number
FROM spans AS s
JOIN _xsp_step_names AS n ON n.name = s.name
WHERE s.run_id = getvariable('xsp_run_id') AND list_contains(getvariable('xsp_step_range_kinds'), s.kind)
  AND starts_with(s.name, getvariable('xsp_step_name_prefix'));

-- Each CPU match with its step (ordinal in its process) and that step's number. In start order,
-- the longer first, a match starts a new step when it ends after every earlier match of its
-- process; else it lies inside the step before. (A step that overlaps the next by a rounding
-- error still ends after it starts: two steps.)
CREATE OR REPLACE TEMP TABLE _xsp_step_cpu AS
WITH ordered AS (
    SELECT *, max(end_ns) OVER (PARTITION BY pid ORDER BY start_ns, end_ns DESC, span_id
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_end
    FROM _xsp_step_matches
    WHERE tid IS NOT NULL
), numbered AS (
    SELECT *, sum(CASE WHEN earlier_end IS NULL OR end_ns > earlier_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY pid ORDER BY start_ns, end_ns DESC, span_id ROWS UNBOUNDED PRECEDING) - 1 AS ordinal
    FROM ordered
)
SELECT span_id, pid, ordinal,
       first_value(number) OVER (PARTITION BY pid, ordinal ORDER BY start_ns, end_ns DESC, span_id) AS number
FROM numbered;

CREATE OR REPLACE TEMP TABLE _xsp_step_list AS SELECT DISTINCT pid, ordinal, number FROM _xsp_step_cpu;
SET VARIABLE xsp_step_ranges_found = (SELECT count(*) FROM _xsp_step_list);
-- Numbers name the steps when every step has one of its own within its process.
SET VARIABLE xsp_step_numbers_used = (
    SELECT count(*) > 0 AND count(number) = count(*)
           AND count(*) = (SELECT count(*) FROM (SELECT DISTINCT pid, number FROM _xsp_step_list))
    FROM _xsp_step_list
);

UPDATE spans SET iteration = f.iteration
FROM (
    SELECT span_id, CASE WHEN getvariable('xsp_step_numbers_used') THEN number ELSE ordinal END AS iteration
    FROM _xsp_step_cpu
    UNION ALL
    SELECT span_id, number FROM _xsp_step_matches WHERE tid IS NULL AND getvariable('xsp_step_numbers_used')
) AS f
WHERE spans.run_id = getvariable('xsp_run_id') AND spans.span_id = f.span_id AND f.iteration IS NOT NULL;

DROP TABLE _xsp_step_names;
DROP TABLE _xsp_step_matches;
DROP TABLE _xsp_step_cpu;
DROP TABLE _xsp_step_list;
