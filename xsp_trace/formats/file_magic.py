"""The first bytes that identify each input file kind `convert` accepts (xsp_trace.convert.common.detect_source)."""

SQLITE_MAGIC = b"SQLite format 3\x00"  # every SQLite 3 database (nsys export --type sqlite)
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"  # a .nsys-rep / .qdrep written by nsys profile
GZIP_MAGIC = b"\x1f\x8b"  # a gzip stream (PyTorch profiler .json.gz)
DUCKDB_MAGIC = b"DUCK"  # a DuckDB database file: these bytes after an 8-byte checksum
DUCKDB_MAGIC_OFFSET = 8
