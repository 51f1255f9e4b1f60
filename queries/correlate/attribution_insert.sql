-- correlate/attribution_insert: the `attribution` row of every span of one run.
--
-- From: `spans` of run getvariable('xsp_run_id') and the TEMP tables correlate/attribution made
-- (`_xsp_span_step`, `_xsp_phase_marks`, `_xsp_own_attribution`) with `_xsp_span_inherited`
-- (span_id, depth, phase_span_id, forward_span_id: the nearest self-or-ancestor marking a phase,
-- resp. the forward op of the nearest self-or-ancestor backward op; xsp_trace.correlate.inherit_down).
-- Computes: `attribution` (step, phase and forward op of every span; see the table's comments).

INSERT INTO attribution (run_id, span_id, step_span_id, phase, phase_span_id, forward_span_id)
SELECT
    s.run_id,
    s.span_id,
    st.step_span_id,
    -- The phase the marking span names.
    m.phase,
    i.phase_span_id,
    i.forward_span_id
FROM spans AS s
LEFT JOIN _xsp_span_step AS st ON st.span_id = s.span_id
LEFT JOIN _xsp_span_inherited AS i ON i.span_id = s.span_id
LEFT JOIN _xsp_phase_marks AS m ON m.span_id = i.phase_span_id
WHERE s.run_id = getvariable('xsp_run_id');

DROP TABLE _xsp_span_step;
DROP TABLE _xsp_run_steps;
DROP TABLE _xsp_step_any;
DROP TABLE _xsp_step_own;
DROP TABLE _xsp_phase_names;
DROP TABLE _xsp_phase_marks;
DROP TABLE _xsp_backward_forward;
DROP TABLE _xsp_own_attribution;
DROP TABLE _xsp_span_inherited;
