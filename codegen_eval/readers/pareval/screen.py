"""Cheap screens of a ParEval candidate's source, run before it is compiled.

In upstream-compatible mode the candidate shares a translation unit and a process with the
driver that prints `Validation: PASS`, so the verdict is forgeable. These screens stop the
obvious forgeries (a second main, redefining the driver's functions or its identifiers with
macros, ending the process after printing the driver's lines, calling the baseline that the
verdict compares against). They are a text screen and can be bypassed by a determined
candidate: the trusted mode (trusted.py) is the answer to that, not more patterns here.
"""

from __future__ import annotations

import re

from codegen_eval.ctext import skip_comment_or_literal

DRIVER_FUNCTIONS = ("main", "init", "compute", "best", "validate", "reset", "destroy")
# Ways to end or leave the process (or hide later output) after printing a forged verdict.
PROCESS_ESCAPES = frozenset(
    "exit _exit _Exit quick_exit atexit at_quick_exit abort terminate fork vfork execv "
    "execve execvp execl execlp system popen dlopen dlsym syscall asm __asm__ __asm freopen "
    "fclose dup2 dup3 constructor destructor longjmp siglongjmp setjmp sigsetjmp".split()
)
VERDICT_WORDS = ("Validation", "BestSequential", "Time:")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)", re.M)
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]*)"', re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PAREN = r"\((?:[^()]|\([^()]*\))*\)"


def strip_comments_and_strings(code: str) -> tuple[str, list[str]]:
    """(code with comments and string/char literals blanked, the string literals' texts)."""
    out: list[str] = []
    strings: list[str] = []
    i = 0
    while i < len(code):
        j = skip_comment_or_literal(code, i)
        if j == i:
            out.append(code[i])
            i += 1
            continue
        piece = code[i:j]
        if piece[0] in "\"'":
            strings.append(piece)
            out.append(piece[0] + " " * max(0, len(piece) - 2) + piece[0])
        else:
            out.append("".join(c if c == "\n" else " " for c in piece))
        i = j
    return "".join(out), strings


def screen_candidate(
    code: str,
    *,
    baseline_name: str = "",
    driver_identifiers: frozenset[str] = frozenset(),
    in_process_verdict: bool = True,
) -> tuple[str, str] | None:
    """(construct, one-line explanation) for the first forbidden construct, or None."""
    bare, strings = strip_comments_and_strings(code)
    idents = set(_IDENT.findall(bare))
    if baseline_name and baseline_name in idents:
        return "baseline_call", f"calls {baseline_name}, the baseline the verdict compares with"
    if _QUOTED_INCLUDE.search(bare):
        return "include", 'includes a harness-local file with #include "..."'
    if not in_process_verdict:
        return None
    for fn in DRIVER_FUNCTIONS:
        if re.search(rf"\b{fn}\s*{_PAREN}\s*(?:const\s*)?\{{", bare):
            return "driver_symbol", f"defines {fn}(), which belongs to the driver"
    for m in _DEFINE.finditer(bare):
        name = m.group(2)
        if m.group(1) == "undef" or name in driver_identifiers or name in DRIVER_FUNCTIONS:
            return "macro", f"#{m.group(1)} {name} would change the driver code compiled after it"
    if "##" in bare:
        return "macro", "token pasting (##) can build names the screen cannot see"
    escapes = sorted(idents & PROCESS_ESCAPES)
    if escapes:
        return (
            "process_escape",
            f"uses {escapes[0]}, which can end the process after a forged verdict",
        )
    for s in strings:
        for word in VERDICT_WORDS:
            if word in s:
                return "verdict_text", f"prints {word!r}, a line of the driver's verdict"
    return None


def driver_identifiers(*sources: str) -> frozenset[str]:
    """Identifiers of the driver code compiled with the candidate: a candidate macro with one
    of these names would rewrite the driver (e.g. `#define fequal(...) true`)."""
    names: set[str] = set()
    for src in sources:
        bare, _ = strip_comments_and_strings(src)
        names.update(_IDENT.findall(bare))
    return frozenset(names)
