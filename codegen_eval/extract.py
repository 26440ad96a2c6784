"""Pull the code out of a model's reply.

Order of preference (the first that yields code wins):
1. fenced blocks (``` or ~~~) whose info string names the wanted language (aliases below);
   several such blocks: the longest, because models often put a usage example after the answer;
2. untagged fenced blocks, longest first;
3. any fenced block when no language was asked for, or when the only blocks carry another tag
   (a model that labels C++ as "c" is still answering);
4. an unterminated fence (the reply was cut at max_tokens): everything after it;
5. no fence at all: for Verilog the `module ... endmodule` span, for C-like languages the text
   from the first line that looks like code, when it does look like code.
Nothing found gives status "no_code", which scorers report as FailureClass.NO_CODE.
Reasoning blocks (<think>...</think>) are removed first so code inside them is not taken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LANGUAGE_ALIASES: dict[str, frozenset[str]] = {
    "c": frozenset({"c", "h"}),
    "cpp": frozenset({"cpp", "c++", "cxx", "cc", "hpp", "h++"}),
    "openmp": frozenset({"c", "cpp", "c++", "openmp", "omp"}),
    "mpi": frozenset({"c", "cpp", "c++", "mpi"}),
    "cuda": frozenset({"cuda", "cu", "cpp", "c++", "c"}),
    "verilog": frozenset({"verilog", "v", "systemverilog", "sv"}),
    "systemverilog": frozenset({"verilog", "v", "systemverilog", "sv"}),
    "python": frozenset({"python", "py", "python3"}),
}

_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_OPEN_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)\n", re.MULTILINE)
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_MODULE = re.compile(r"^\s*module\b.*?^\s*endmodule\b", re.MULTILINE | re.DOTALL)
_C_LIKE_START = re.compile(
    r"^\s*(#\s*(include|define|pragma|if)|(static\s+|inline\s+|extern\s+|const\s+|unsigned\s+)*"
    r"(void|int|long|float|double|char|bool|size_t|auto|template|struct|class|namespace|using|"
    r"__global__|__device__)\b)",
    re.MULTILINE,
)
_PY_START = re.compile(r"^(def |class |import |from \S+ import )", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Extraction:
    code: str
    status: str  # "ok" | "no_code"
    method: str  # "fenced:lang" | "fenced:untagged" | "fenced:other" | "unterminated" | "bare" | ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _tag(info: str) -> str:
    # "cpp title=main.cpp" / "{.c}" -> the first word, lowercased, braces and dots dropped
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return word.strip("{}.").lower()


def extract_code(reply: str, language: str | None = None) -> Extraction:
    """Extract code for `language` (a key of LANGUAGE_ALIASES or any tag) from `reply`."""
    text = _THINK.sub("", reply or "")
    if not text.strip():
        return Extraction("", "no_code", "", "empty reply")
    lang = (language or "").lower()
    wanted = LANGUAGE_ALIASES.get(lang, frozenset({lang}) if lang else frozenset())

    blocks = [(_tag(m["info"]), m["body"]) for m in _FENCE.finditer(text)]
    blocks = [(t, b) for t, b in blocks if b.strip()]
    tagged = [b for t, b in blocks if t and t in wanted]
    if tagged:
        return Extraction(_clean(max(tagged, key=len)), "ok", f"fenced:{lang}")
    untagged = [b for t, b in blocks if not t]
    if untagged:
        return Extraction(_clean(max(untagged, key=len)), "ok", "fenced:untagged")
    # Blocks tagged as something else: prose languages (text, output, bash) are not the answer
    other = [b for t, b in blocks if t not in {"text", "txt", "output", "console", "bash", "sh"}]
    if other:
        return Extraction(_clean(max(other, key=len)), "ok", "fenced:other")
    if blocks:
        return Extraction("", "no_code", "", "only shell/output blocks in the reply")

    opened = list(_OPEN_FENCE.finditer(text))
    if opened:
        body = text[opened[-1].end() :]
        if body.strip():
            return Extraction(_clean(body), "ok", "unterminated")

    bare = _bare_code(text, lang)
    if bare:
        return Extraction(_clean(bare), "ok", "bare")
    return Extraction("", "no_code", "", "no fenced block and nothing that looks like code")


def _bare_code(text: str, lang: str) -> str:
    if lang in {"verilog", "systemverilog"} or (not lang and "endmodule" in text):
        modules = _MODULE.findall(text)
        spans = [m.group(0) for m in _MODULE.finditer(text)]
        return "\n\n".join(spans) if modules else ""
    if lang == "python":
        m = _PY_START.search(text)
        return text[m.start() :] if m else ""
    m = _C_LIKE_START.search(text)
    if m and ("{" in text[m.start() :] or ";" in text[m.start() :]):
        return text[m.start() :]
    return ""


def _clean(code: str) -> str:
    return code.strip("\n").rstrip() + "\n"
