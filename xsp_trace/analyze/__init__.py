"""The XSP analyses: leveled correction and the paper's analyses as SQL (queries/analyses/*.sql).

The catalog (`catalog.py`), the session that runs them (`session.py`), their installation as views
(`install.py`, which loads neither the session nor the critical path), the Python builders
(`critical_path/`), the findings (`findings/`) and the HTML report (`report/`). This module imports
nothing: importing one part loads only what that part needs."""
