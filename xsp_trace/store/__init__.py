"""What `convert` writes and every reader opens: the DuckDB session (`connection.py`, with the
query deadline `interrupt_after`), the database file (`database.py`: schema versions, atomic
writing, run rows) or Parquet dataset folder (`dataset.py`), the schema's description
(`schema.py`), the opening of either form (`opening.py`), reading nothing but the data
(`data_only.py`) and small SQL helpers (`sql.py`). It knows no analysis: `convert` installs them
(xsp_trace/analyze/install.py) as a step of its own."""
