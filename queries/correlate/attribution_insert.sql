-- correlate/attribution_insert: the `attribution` row of every span of one run whose span id is in
-- [getvariable('xsp_span_lo'), getvariable('xsp_span_hi')] (xsp_trace.convert.correlate.insert_attribution
-- runs it once per range of ATTRIBUTION_BATCH_SPANS ids, so that the hash tables of its joins hold
-- one range, not the whole run).
--
-- From: `spans` of run getvariable('xsp_run_id') and the TEMP tables correlate/attribution made
-- (`_xsp_span_step`, `_xsp_phase_marks`) with `_xsp_span_inherited`
-- (span_id, depth, phase_span_id, forward_span_id: the nearest self-or-ancestor marking a phase,
-- resp. the forward op of the nearest self-or-ancestor backward op; xsp_trace.convert.correlate.inherit_down).
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
LEFT JOIN (
    SELECT * FROM _xsp_span_step WHERE span_id BETWEEN getvariable('xsp_span_lo') AND getvariable('xsp_span_hi')
) AS st ON st.span_id = s.span_id
LEFT JOIN (
    SELECT * FROM _xsp_span_inherited WHERE span_id BETWEEN getvariable('xsp_span_lo') AND getvariable('xsp_span_hi')
) AS i ON i.span_id = s.span_id
LEFT JOIN _xsp_phase_marks AS m ON m.span_id = i.phase_span_id
WHERE s.run_id = getvariable('xsp_run_id')
  AND s.span_id BETWEEN getvariable('xsp_span_lo') AND getvariable('xsp_span_hi');
