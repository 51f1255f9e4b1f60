"""The XSP analyses: leveled correction and the paper's analyses as SQL (queries/analyses/*.sql)."""

from .catalog import ANALYSES, BY_NAME, Analysis
from .session import AnalysisOptions, Result, open_session, prepare, run_analysis

__all__ = ["ANALYSES", "BY_NAME", "Analysis", "AnalysisOptions", "Result", "open_session", "prepare", "run_analysis"]
