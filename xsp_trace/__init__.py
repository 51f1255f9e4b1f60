"""xsp-trace: across-stack profiling of ML models on GPUs (after XSP, Li et al., IPDPS 2020).

The capture side, the SQL modules and the schema live at the top of a checkout (`capture/`,
`queries/`, `schemas/`) and reach the package through the symlinks `xsp_trace/capture`,
`xsp_trace/queries` and `xsp_trace/schemas`: the build backend follows them into the wheel, and an
editable install sees them in place (docs/design.md, "Package layout").
"""

__version__ = "0.2.0"
