"""Perfetto export: every run of a database as one TrackEvent protobuf trace for ui.perfetto.dev.

CPU threads carry the nested model > layer > op > CUDA API slices; each GPU has a group track
with one child track per stream; flows join each launching API call to its GPU work.
"""

from .export import ExportStats, PerfettoOptions, export_perfetto, write_trace

__all__ = ["ExportStats", "PerfettoOptions", "export_perfetto", "write_trace"]
