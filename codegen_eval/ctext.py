"""C text, read without a parser: where a comment or literal ends, which `}` closes a `{`.

For places that cut functions out of C sources that may not parse (a benchmark driver, a
kernel file, a model's answer), where tree-sitter (`suites/_csource.py`) would be too much.
Braces inside comments, strings and character literals do not count.
"""

from __future__ import annotations


def skip_comment_or_literal(text: str, i: int) -> int:
    """Index just after the comment or literal starting at text[i], or i if none starts."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    if text[i] in "\"'":
        q, j = text[i], i + 1
        while j < len(text) and text[j] != q:
            j += 2 if text[j] == "\\" else 1
        return min(j + 1, len(text))
    return i


_CLOSING = {"{": "}", "(": ")", "[": "]"}


def matching_brace(text: str, open_at: int) -> int | None:
    """Index of the bracket that closes the `{`, `(` or `[` at open_at (comments and literals
    skipped), or None when the text ends first."""
    opening = text[open_at]
    closing = _CLOSING[opening]
    depth, i = 0, open_at
    while i < len(text):
        j = skip_comment_or_literal(text, i)
        if j != i:
            i = j
            continue
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None
