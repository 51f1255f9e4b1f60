"""What `xsp-trace analyze` does once its options are parsed: open the session, run the chosen
analyses (or the findings, or the one-screen summary) under the time limit, print them, and write
the HTML report. The command line (xsp_trace/cli.py) only turns options into these arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalog import ANALYSES
from .empty import check_selection
from .present import View, present, present_summary
from .session import AnalysisOptions, open_session, run_analysis


@dataclass(frozen=True)
class AnalyzeRequest:
    """What to print: the analyses named with -a (empty: all, or the summary), the findings, --all."""

    memory_limit: str
    timeout: float
    chosen: tuple[str, ...] = ()
    findings: bool = False
    show_all: bool = False
    report: Path | None = None

    def names(self, options: AnalysisOptions) -> list[str]:
        """The analyses to run: -a's (and what_if when --what-if is given), else every one."""
        if not (self.chosen or options.what_if):
            return [a.name for a in ANALYSES]
        return list(self.chosen) + (["what_if"] if options.what_if else [])

    def wants_summary(self, options: AnalysisOptions, view: View) -> bool:
        """Plain `analyze DB` prints the one-screen summary; any choice of what to show prints tables."""
        chosen = self.chosen or options.what_if or self.show_all or view.sort or view.columns
        return view.fmt == "table" and not (self.findings or chosen)


def run_analyze(database: Path, source: Path, options: AnalysisOptions, view: View, request: AnalyzeRequest) -> Path | None:
    """Analyse `database` (opened from `source`, the path the user gave) and print as `view` says;
    returns the report written, if one was asked for."""
    from ..store.connection import interrupt_after
    from ..store.sql import values_readable

    with values_readable(source):
        con = open_session(database, options)
    con.execute("SET memory_limit = ?", [request.memory_limit])
    with interrupt_after(con, request.timeout, source), values_readable(source):
        notes = check_selection(con, options, source)
        if request.findings:
            from .findings.find import find, findings_result

            results = [findings_result(find(con))] + [run_analysis(con, n) for n in request.chosen]
        elif request.wants_summary(options, view):
            results = []
            present_summary(con, options, view, notes)
        else:
            results = [run_analysis(con, n) for n in request.names(options)]
        if results:
            present(con, results, options, view, notes)
        if request.report is None:
            return None
        from .findings.find import find
        from .report.html_report import write_report

        all_results = {a.name: run_analysis(con, a.name) for a in ANALYSES}
        write_report(request.report, source, all_results, find(con, all_results))
        return request.report
