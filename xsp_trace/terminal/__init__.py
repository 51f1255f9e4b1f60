"""Tables printed in a terminal: `raw_table.py` prints values as they are (rich table or CSV),
`streamed_table.py` prints `query`'s rows while they arrive, `readable_table.py` lays out the
analyses' tables in readable units to fit the width."""
