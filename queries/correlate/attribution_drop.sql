-- correlate/attribution_drop: the end of one run's correlation, once every range of
-- correlate/attribution_insert is written.
--
-- From: the TEMP tables correlate/attribution made and xsp_trace.convert.correlate.inherit_down's
-- `_xsp_span_inherited`. Computes: nothing; drops them.

DROP TABLE _xsp_span_step;
DROP TABLE _xsp_run_steps;
DROP TABLE _xsp_step_any;
DROP TABLE _xsp_step_own;
DROP TABLE _xsp_phase_names;
DROP TABLE _xsp_phase_marks;
DROP TABLE _xsp_backward_forward;
DROP TABLE _xsp_own_attribution;
DROP TABLE _xsp_span_inherited;
