"""Text from a trace as a terminal may show it: the one rule for every name, note and error line
that reaches a terminal.

A kernel, op or NVTX name is whatever the traced program wrote, so a trace from someone else can
hold terminal commands: ESC sequences that write the clipboard (`ESC]52`), add hyperlinks
(`ESC]8`), clear the screen or set the window title, a NUL, or bidirectional overrides that show
text in another order than it has. `printable` writes each such character as an escape
(`\\x1b`, `\\u202e`), as Python's repr does, so the terminal shows it instead of acting on it.
Backslashes stay as they are (paths and regular expressions read as typed).

CSV and JSON keep the exact text (JSON writes these characters as `\\u` escapes itself).
"""

from __future__ import annotations

import re

# C0 controls (NUL, BEL, ESC, line breaks...), DEL, the C1 controls U+0080-U+009F (U+009B is CSI
# to a terminal that reads 8-bit controls), the line and paragraph separators, and the
# bidirectional formatting characters (marks, embeddings, overrides, isolates).
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """`text` with every character a terminal would act on (see the module) written as an escape."""
    if text.isascii() and text.isprintable():  # most names: no control character, nothing to search
        return text
    return UNSAFE.sub(_escape, text)
