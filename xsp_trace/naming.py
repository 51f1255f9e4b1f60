"""How span names map to XSP levels: the range names our capture side writes, and op names.

This is the one place that knows these conventions; capture/ writes names with the
functions here and the converters classify names with `classify_range`.
"""

from __future__ import annotations

import re

from .store.sql import quote_literal

# NVTX domain of the ranges written by xsp_trace.capture.
XSP_NVTX_DOMAIN = "xsp"

MODEL_PREFIX = "xsp.model:"
LAYER_PREFIX = "xsp.layer:"
_LAYER_RE = re.compile(r"^xsp\.layer:(\d+):")

# Framework ops as they appear as NVTX ranges (torch.autograd.profiler.emit_nvtx) or Kineto cpu_op names.
OP_PREFIXES = ("aten::", "c10d::", "prim::", "torchvision::")


def model_range_name(model: str) -> str:
    return f"{MODEL_PREFIX}{model}"


def layer_range_name(index: int, qualified_name: str, type_name: str) -> str:
    return f"{LAYER_PREFIX}{index}:{qualified_name}:{type_name}"


def parse_layer_name(name: str) -> tuple[int, str, str] | None:
    """(index, qualified name, type name) of an xsp layer range name, None for other names."""
    match = _LAYER_RE.match(name)
    if not match:
        return None
    qualified_name, _, type_name = name[match.end() :].rpartition(":")
    return int(match.group(1)), qualified_name, type_name


def classify_range(name: str) -> tuple[str, int | None]:
    """(kind, layer_index) of a CPU range by its name: model, layer, op or annotation."""
    if name.startswith(MODEL_PREFIX):
        return "model", None
    match = _LAYER_RE.match(name)
    if match:
        return "layer", int(match.group(1))
    if name.startswith(OP_PREFIXES):
        return "op", None
    return "annotation", None


def install_sql_macros(con) -> None:
    """DuckDB macros xsp_range_kind(name) and xsp_layer_index(name), equivalent to classify_range,
    for converters that classify inside SQL."""
    ops = " OR ".join(f"starts_with(name, '{p}')" for p in OP_PREFIXES)
    # The layer pattern is anchored at LAYER_PREFIX: the prefix test first spares the regular
    # expression the millions of other names (same result, a fraction of the time).
    con.execute(
        f"""CREATE OR REPLACE TEMP MACRO xsp_range_kind(name) AS
            CASE WHEN starts_with(name, '{MODEL_PREFIX}') THEN 'model'
                 WHEN starts_with(name, '{LAYER_PREFIX}') AND regexp_matches(name, '{_LAYER_RE.pattern}') THEN 'layer'
                 WHEN {ops} THEN 'op' ELSE 'annotation' END"""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP MACRO xsp_layer_index(name) AS
            CASE WHEN starts_with(name, '{LAYER_PREFIX}')
                 THEN TRY_CAST(nullif(regexp_extract(name, '{_LAYER_RE.pattern}', 1), '') AS INTEGER) END"""
    )


def name_macro_statements() -> list[str]:
    """The CREATE TEMP MACRO statements of the macros that parse the XSP range names for the analyses:
    xsp_model_name(name) (the model of an "xsp.model:<name>" range, else NULL), xsp_layer_qualname(name)
    and xsp_layer_type(name) (qualified name and type of an "xsp.layer:<index>:<qualname>:<type>"
    range, else NULL), and xsp_normalized_name(name) (normalize_name)."""
    prefix = _sql_regex_literal(re.escape(LAYER_PREFIX))
    return [
        f"""CREATE OR REPLACE TEMP MACRO xsp_model_name(name) AS
            CASE WHEN starts_with(name, '{MODEL_PREFIX}') THEN substr(name, {len(MODEL_PREFIX) + 1}) END""",
        f"CREATE OR REPLACE TEMP MACRO xsp_layer_qualname(name) AS nullif(regexp_extract(name, '^{prefix}\\d+:(.*):[^:]*$', 1), '')",
        f"CREATE OR REPLACE TEMP MACRO xsp_layer_type(name) AS nullif(regexp_extract(name, '^{prefix}\\d+:.*:([^:]*)$', 1), '')",
        _normalize_macro_statement(),
    ]


def install_name_macros(con) -> None:
    """The macros of name_macro_statements, TEMP in `con`."""
    for statement in name_macro_statements():
        con.execute(statement)


def _sql_regex_literal(pattern: str) -> str:
    return pattern.replace("'", "''")


# Order of kinds for identical CPU intervals: the earlier one encloses the later.
KIND_NESTING_RANK = {"model": 0, "layer": 1, "annotation": 2, "op": 3, "api": 4, "other": 5, "sync": 6}
GPU_KINDS = ("kernel", "memcpy", "memset", "sync")


# Training phases named by ranges the frameworks write. A span's phase is decided by the innermost
# range (itself included; for GPU work: enclosing its launch) that matches one of these patterns
# (DuckDB regular expressions, searched in the name), or that is an autograd backward op (Kineto
# arg "Fwd thread id" > 0, see xsp_trace/formats/kineto_fields.py).
PHASE_RULES: tuple[tuple[str, str], ...] = (
    # torch.autograd's engine: "autograd::engine::evaluate_function: AddmmBackward0", the node itself.
    ("backward", r"^autograd::engine::evaluate_function: "),
    ("backward", r"^\w*Backward\d*$"),
    # Lightning/TorchRec-style annotations: "## backward ##", "## forward:pos_w ##".
    ("backward", r"^## ?backward\b"),
    ("forward", r"^## ?forward\b"),
    # torch.optim's record_function ranges: "Optimizer.step#Adagrad.step", "Optimizer.zero_grad#SGD.zero_grad".
    ("optimizer", r"^Optimizer\.(step|zero_grad)#"),
    ("optimizer", r"^## ?(optimizer|zero_grad)\b"),
    # A module's forward as DDP/FSDP and torch's module profiler name it.
    ("forward", r"^(DistributedDataParallel|FullyShardedDataParallel)\.forward$"),
    # An xsp-trace capture's model range is one forward pass (inference capture) or encloses the
    # forward of a training step, whose backward and optimizer ranges are closer to their work.
    ("forward", "^" + re.escape(MODEL_PREFIX)),
)


# Data loading as the frameworks name it: torch.utils.data's record_function range around each
# batch ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", also "..._MultiProcessing...")
# and, recorded with with_stack / python functions, the DataLoader's own Python frames. A CPU span
# inside such a range (or one itself) is data loading (analyses/step_causes.sql, findings).
DATA_LOADING_PATTERN = r"^enumerate\(DataLoader\)#|DataLoaderIter\.__next__|torch/utils/data/dataloader\.py"


def install_phase_rules(con) -> None:
    """TEMP macro xsp_phase_of(name): the phase the first matching PHASE_RULES pattern names, else
    NULL (constant patterns, so DuckDB compiles each once), for queries/correlate/attribution.sql."""
    cases = " ".join(f"WHEN regexp_matches(name, {quote_literal(pattern)}) THEN {quote_literal(phase)}" for phase, pattern in PHASE_RULES)
    con.execute(f"CREATE OR REPLACE TEMP MACRO xsp_phase_of(name) AS CASE {cases} END")


# Layer views of traces not captured by xsp-trace capture: ranges they already carry, chosen by
# a regular expression over span names (`xsp-trace analyze --layer-ranges`). Group 1 of the
# pattern, if any, is the layer name; group 2, if any, the layer type. Presets by name:
LAYER_RANGE_PRESETS: dict[str, str] = {
    # torch.profiler(with_stack=True / with_modules=True) python_function events, kept by
    # `convert --python-functions`: "nn.Module: Linear_0" (instance name, class name).
    "modules": r"^nn\.Module: ((\w+?)_\d+)$",
    # torch.autograd.profiler.emit_nvtx / record_function-named module ranges ("## name ##").
    "hash-ranges": r"^## ?(.+?) ?##$",
}


def layer_range_pattern(text: str) -> str:
    """The regular expression for --layer-ranges: a preset's, or the text itself."""
    return LAYER_RANGE_PRESETS.get(text, text)


# Per-instance details that profilers append to a name: torch's NVTX op ranges (emit_nvtx, and
# nsys's --pytorch=autograd-shapes-nvtx) read "aten::mm, seq = 12, op_id = 345, sizes = [[8, 16],
# [16, 4]], input_op_ids = [(344, 0)]" -- the sequence number and op id are new on every call, the
# sizes and input edges vary with the data. What follows the first of them names no different op.
INSTANCE_SUFFIX_PATTERN = r", (seq|op_id|sizes|input_op_ids) = .*$"
_INSTANCE_SUFFIX_RE = re.compile(INSTANCE_SUFFIX_PATTERN, re.DOTALL)


def normalize_name(name: str) -> str:
    """The name without its per-instance details, so that every call of one op (kernel, layer)
    compares under one name: "aten::mm, seq = 12, op_id = 345, sizes = [[8, 16]]" -> "aten::mm".
    Names without such details are returned unchanged. `install_normalize_macro` is the same in SQL."""
    return _INSTANCE_SUFFIX_RE.sub("", name)


def _normalize_macro_statement() -> str:
    # Same pattern as normalize_name; RE2 and Python agree on it; 's' lets '.' match newlines like re.DOTALL.
    return f"CREATE OR REPLACE TEMP MACRO xsp_normalized_name(name) AS regexp_replace(name, {quote_literal(INSTANCE_SUFFIX_PATTERN)}, '', 's')"


def install_normalize_macro(con) -> None:
    """TEMP macro xsp_normalized_name(name), equal to normalize_name."""
    con.execute(_normalize_macro_statement())


# Kernel names as people read them: the demangled base name, as nsys's `:base` report option and
# CUPTI's kernel shortName print it -- "void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)"
# -> "vectorized_elementwise_kernel": no return type, namespace, template arguments or parameters.
# Names that are not C++ function signatures (cuBLAS's "sm80_xmma_gemm_...", "aten::mm", NVTX
# ranges) are returned unchanged.
_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_~][\w~]*$")


def _strip_trailing_group(text: str, close: str) -> tuple[str, str] | None:
    """(text before, group) when `text` ends with the bracket group closed by `close`, else None."""
    if not text.endswith(close):
        return None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c in _CLOSE and not (c == ">" and text[i - 1 : i + 1] == "->"):
            depth += 1
        elif c in _OPEN:
            depth -= 1
            if depth == 0:
                return (text[:i], text[i:]) if c == _CLOSE[close] else None
    return None


def _head_parts(text: str) -> tuple[str, str]:
    """(the words before the last space outside brackets -- "void" of "void ns::kernel" -- or "",
    the last `::`-separated part outside brackets after them), in one scan."""
    depth, cut, start = 0, 0, 0
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith("::", i):
            start = i + 2
        elif depth == 0 and c == " ":
            cut, start = i, i + 1  # "void kernel": the return type ends at a space outside brackets
    return text[:cut], text[start:]


# What may precede a kernel's qualified name in a demangled signature (kernels return void).
_KERNEL_RETURN_WORDS = frozenset({"void", "static", "__global__"})


def kernel_name_parts(name: str) -> tuple[str, str] | None:
    """(base name, template arguments or "") of a demangled kernel signature, None for other names."""
    text = name.strip()
    params = _strip_trailing_group(text, ")")
    if params is None:
        return None
    text = params[0].rstrip()
    template = ""
    args = _strip_trailing_group(text, ">")
    if args is not None:
        text, template = args[0].rstrip(), args[1]
    returns, base = _head_parts(text)
    if not _IDENTIFIER_RE.match(base) or not set(returns.split()) <= _KERNEL_RETURN_WORDS:
        return None  # "Memcpy HtoD (Pageable -> Device)" has the shape of a call but is no signature
    return base, template


def short_kernel_name(name: str) -> str:
    """The demangled base name of a kernel (nsys `:base`), or `name` when it is not a signature."""
    parts = kernel_name_parts(name)
    return parts[0] if parts else name


# Wrapper kernels whose own name says nothing (cutlass::Kernel2<cutlass_80_tensorop_..._gemm...>,
# cutlass::device_kernel<...>): readable_kernel_name names them by their first template argument.
GENERIC_KERNEL_BASES = frozenset({"Kernel", "Kernel2", "kernel", "device_kernel", "KernelWrapper", "generic_kernel"})


def _first_template_argument(template: str) -> str:
    """'<A<x, y>, B>' -> 'A<x, y>'."""
    inner, depth = template[1:-1], 0
    for i, c in enumerate(inner):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == "," and depth == 0:
            return inner[:i].strip()
    return inner.strip()


def readable_kernel_name(name: str) -> str:
    """short_kernel_name, except that a generic wrapper (cutlass Kernel2<...>, whose base name nsys
    prints) is named by its first template argument's base name."""
    parts = kernel_name_parts(name)
    if parts is None:
        return name
    base, template = parts
    if base in GENERIC_KERNEL_BASES and template:
        first = _first_template_argument(template)
        args = _strip_trailing_group(first, ">")
        inner = _head_parts(args[0].rstrip() if args else first)[1]
        if _IDENTIFIER_RE.match(inner):
            return inner
    return base


def display_name(name: str) -> str:
    """A name as a sentence (a finding, a summary) shows it: without torch's per-instance details
    (normalize_name: "aten::mm, seq = 12, op_id = 345" -> "aten::mm"), a kernel by its readable base
    name (readable_kernel_name: "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)"
    -> "vectorized_elementwise_kernel"). Other names are returned unchanged. Where several kernels of
    one table share a base name, short_names tells them apart."""
    return readable_kernel_name(normalize_name(name))


def short_names(names: list[str]) -> dict[str, str]:
    """Short names for the distinct `names` of one table: the base name where it is unique among them,
    the base name with its template arguments where several different kernels share a base name
    (four cutlass GEMMs are all "Kernel"), the full name where even those are shared."""
    parts = {n: kernel_name_parts(n) for n in set(names)}
    bases: dict[str, int] = {}
    for p in parts.values():
        if p:
            bases[p[0]] = bases.get(p[0], 0) + 1
    templated: dict[str, int] = {}
    for p in parts.values():
        if p and bases[p[0]] > 1:
            templated[p[0] + p[1]] = templated.get(p[0] + p[1], 0) + 1
    out = {}
    for name, p in parts.items():
        if p is None:
            out[name] = name
        elif bases[p[0]] == 1:
            out[name] = p[0]
        else:
            out[name] = p[0] + _NAMESPACE_RE.sub("", p[1]) if templated[p[0] + p[1]] == 1 else name
    return out


# Namespaces inside template arguments ("at::native::", "(anonymous namespace)::"): noise once the
# base name is known.
_NAMESPACE_RE = re.compile(r"(?:\(anonymous namespace\)::|\b[A-Za-z_]\w*::)+")
