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

import bisect
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

# Every pattern here is matched against one line at a time or has no nested or lazy repeat
# over the whole reply: a reply is model output (hostile in effect), and the former
# whole-text patterns (a lazy body up to a back-referenced closing fence) took 147 s on 150 KB
# of unclosed fences.
_OPEN_LINE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)")
_CLOSE_LINE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*")
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_MODULE_LINE = re.compile(r"^[ \t]*module\b", re.MULTILINE)
_ENDMODULE_LINE = re.compile(r"^[ \t]*endmodule\b", re.MULTILINE)
_C_LIKE_START = re.compile(
    r"^[ \t]*(#\s*(include|define|pragma|if)|(static\s+|inline\s+|extern\s+|const\s+|unsigned\s+)*"
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

    blocks, unterminated = _fenced_blocks(text)
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

    if unterminated is not None and unterminated.strip():
        return Extraction(_clean(unterminated), "ok", "unterminated")

    bare = _bare_code(text, lang)
    if bare:
        return Extraction(_clean(bare), "ok", "bare")
    return Extraction("", "no_code", "", "no fenced block and nothing that looks like code")


def _fenced_blocks(text: str) -> tuple[list[tuple[str, str]], str | None]:
    """([(tag, body)] of the closed fenced blocks, the text after the last opening fence line
    when the reply has no closed block). A block opens on a line of 3+ backticks or tildes plus
    an info string and closes at the first later line holding exactly the same fence; an
    opening that is never closed is skipped (its later lines may open other blocks). Linear:
    closing lines are indexed per fence, and each opening finds its closing by bisection."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    closers: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if (m := _CLOSE_LINE.fullmatch(line)) is not None:
            closers.setdefault(m.group(1), []).append(i)
    openers = [_OPEN_LINE.fullmatch(line) for line in lines[:-1]]  # each ends with a newline
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(openers):
        m = openers[i]
        if m is None:
            i += 1
            continue
        candidates = closers.get(m.group(1), [])
        k = bisect.bisect_right(candidates, i)
        if k == len(candidates):  # never closed: try the next line
            i += 1
            continue
        end = candidates[k]
        body = text[starts[i + 1] : starts[end]]
        blocks.append((_tag(m.group(2)), body))
        i = end + 1
    # an unterminated reply: what follows the last line that could open a fence (a closing
    # line included: "```" alone opens as well as closes)
    last_open = next((j for j in range(len(openers) - 1, -1, -1) if openers[j] is not None), None)
    after = text[starts[last_open + 1] :] if last_open is not None else None
    return blocks, after


def _module_spans(text: str) -> list[str]:
    """Each `module ... endmodule` span: from a line starting with `module` to the first later
    line starting with `endmodule`, the next span searched after it (linear, by bisection)."""
    ends = [m.start() for m in _ENDMODULE_LINE.finditer(text)]
    spans: list[str] = []
    position = 0
    for m in _MODULE_LINE.finditer(text):
        if m.start() < position:
            continue
        k = bisect.bisect_right(ends, m.end())
        if k == len(ends):
            break
        stop = ends[k] + text[ends[k] :].index("endmodule") + len("endmodule")
        spans.append(text[m.start() : stop])
        position = stop
    return spans


def _bare_code(text: str, lang: str) -> str:
    if lang in {"verilog", "systemverilog"} or (not lang and "endmodule" in text):
        return "\n\n".join(_module_spans(text))
    if lang == "python":
        m = _PY_START.search(text)
        return text[m.start() :] if m else ""
    m = _C_LIKE_START.search(text)
    if m and ("{" in text[m.start() :] or ";" in text[m.start() :]):
        return text[m.start() :]
    return ""


def _clean(code: str) -> str:
    return code.strip("\n").rstrip() + "\n"
