"""Code extraction on hostile replies: linear time, and the same answers as the former
whole-text regular expressions (kept here as the oracle) on random small replies."""

from __future__ import annotations

import random
import re
import time

import pytest

from codegen_eval.extract import extract_code

# The former patterns, as an oracle for small inputs only (they are quadratic).
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_OPEN_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)\n", re.MULTILINE)
_MODULE = re.compile(r"^\s*module\b.*?^\s*endmodule\b", re.MULTILINE | re.DOTALL)


def _oracle_blocks(text: str) -> tuple[list[tuple[str, str]], str | None]:
    blocks = []
    for m in _FENCE.finditer(text):
        info = m["info"].strip()
        tag = (info.split(maxsplit=1)[0] if info else "").strip("{}.").lower()
        blocks.append((tag, m["body"]))
    opened = list(_OPEN_FENCE.finditer(text))
    return blocks, (text[opened[-1].end() :] if opened else None)


def _squeeze(code: str) -> str:
    return "\n".join(line for line in code.splitlines() if line.strip())


TOKENS = ["```", "```c", "~~~", "```verilog", "````", "code;", "int x;", "module m;",
          "endmodule", "", "  ```  ", "text", "```text", " module n(input a);",
          "endmodule // x", "void f() {}"]  # fmt: skip


def test_the_fence_scanner_agrees_with_the_former_regex() -> None:
    from codegen_eval.extract import _fenced_blocks, _module_spans

    rng = random.Random(7)
    for _ in range(3000):
        text = "\n".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 12)))
        text += "\n" if rng.random() < 0.5 else ""
        assert _fenced_blocks(text) == _oracle_blocks(text), repr(text)
        old_spans = [_squeeze(m.group(0)) for m in _MODULE.finditer(text)]
        assert [_squeeze(s) for s in _module_spans(text)] == old_spans, repr(text)


@pytest.mark.parametrize(
    ("reply", "language"),
    [
        ("```c\n" * 30000, "c"),  # 150 KB of unclosed fences: 147 s before
        ("module m;\n" * 20000, "verilog"),  # modules never ended: 7.8 s at 40 KB before, quadratic
        ("\n" * 200000 + "x", "c"),
        ("```c\nint x;\n" + "``` \n" * 20000, "c"),
    ],
)
def test_hostile_replies_take_linear_time(reply: str, language: str) -> None:
    started = time.process_time()
    extract_code(reply, language)
    assert time.process_time() - started < 10  # generous: linear work is well under 1 s
