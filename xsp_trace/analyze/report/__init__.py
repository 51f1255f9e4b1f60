"""The self-contained HTML report: `html_report.py` writes it, `svg.py` draws its plots,
`text.py` renders its names and cells."""
