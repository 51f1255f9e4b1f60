"""The first bytes that identify each input file kind `convert` accepts (xsp_trace.convert.common.detect_source)."""

SQLITE_MAGIC = b"SQLite format 3\x00"  # every SQLite 3 database (nsys export --type sqlite)
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"  # a .nsys-rep / .qdrep written by nsys profile
GZIP_MAGIC = b"\x1f\x8b"  # a gzip stream (PyTorch profiler .json.gz)
DUCKDB_MAGIC = b"DUCK"  # a DuckDB database file: these bytes after an 8-byte checksum
DUCKDB_MAGIC_OFFSET = 8

# The SQLite header (https://www.sqlite.org/fileformat.html#the_database_header), big-endian fields:
SQLITE_HEADER_BYTES = 100
SQLITE_PAGE_SIZE_AT = 16  # 2 bytes; the value 1 means 65536
SQLITE_CHANGE_COUNTER_AT = 24  # 4 bytes
SQLITE_PAGE_COUNT_AT = 28  # 4 bytes: "in-header database size", valid when nonzero and...
SQLITE_VALID_FOR_AT = 92  # ...this 4-byte field equals the change counter


def sqlite_length(header: bytes) -> int | None:
    """The length in bytes an SQLite file with this header has (page count x page size), or None
    where the header does not say (written by an SQLite older than 3.7.0, or cut short)."""
    if len(header) < SQLITE_HEADER_BYTES:
        return None

    def field(at: int, size: int = 4) -> int:
        return int.from_bytes(header[at : at + size], "big")

    page_size = field(SQLITE_PAGE_SIZE_AT, 2)
    pages = field(SQLITE_PAGE_COUNT_AT)
    if pages == 0 or field(SQLITE_VALID_FOR_AT) != field(SQLITE_CHANGE_COUNTER_AT):
        return None
    return pages * (65536 if page_size == 1 else page_size)
