"""Findings in words: `find.py` reads them off the analyses' results, `step_causes.py` tells what
sets a step's time from its critical path, `record.py` holds the record, thresholds and wording."""
