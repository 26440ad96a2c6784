"""What the scorer decides from the screened answer's structure alone, once it compiles and
before anything runs: the data sharing of the variables the reference keeps out of the
shared state, and whether a simd answer lets the loop be vectorised at all.

    check_sharing(reference, cand, loop_vars) -> Sharing(racy=("s",), wrong=())
    unvectorised(reference, screened, macros) -> "safelen(1): ..." | None

Data sharing. Every variable the reference names in `reduction`, `private`, `firstprivate`
or `lastprivate` is written by the loop. A loop construct in the answer must
- not leave it shared (`racy`: a race, whether or not it shows in the runs: at -O2 gcc keeps
  a shared scalar in a register for the whole loop, so the runs rarely see it);
- reduce a variable the reference reduces, with the same operator (`-` is `+`, as OpenMP
  defines it; no other operator is taken for another: `max` on lastprivate_rows' `last`
  gave the right value only because the last chunk's thread held the largest one);
- make lastprivate a variable the reference makes lastprivate, and firstprivate one it makes
  firstprivate: private copies lose the value that the program reads after (or before) the
  loop, and an uninitialised copy can hold the right value by chance;
- for a variable the reference merely privatises, any privatising clause will do.
A variable privatised in a way that breaks one of these is `wrong`. Variables the reference
does not name are left to the runs: a shared array made private loses its writes in every
run, and `firstprivate` of a variable the loop only reads is harmless.

Vectorisation. For a simd reference, `safelen(1)` and `simdlen(1)` (one iteration at a time)
and an `if` clause that applies to simd and is not a constant the suite computes to be true
(`if(simd: 0)`, `if(r > 3)`) leave the loop serial: the simd analogue of `num_threads(1)`,
which the observer sees for a parallel loop. No run can observe lanes, so this is read from
the evaluated constants (constant.py), refusing what cannot be computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from codegen_eval.suites._cscreen import Forbidden, ScreenSyntaxError, strip_comments, tokenize

from .constant import evaluate
from .pragma import OmpPragma
from .screen import ScreenedPragma

__all__ = ["LOOP_WORDS", "Sharing", "check_sharing", "unvectorised"]

# directive words that share a loop's iterations (or lanes) out: a variable written by every
# iteration races under them unless it is privatised; `parallel` + `critical`/`single` alone
# does not share iterations and is judged by the observer (replicated_work / not_parallel)
LOOP_WORDS = frozenset({"for", "simd", "taskloop", "loop", "distribute"})


@dataclass(frozen=True, slots=True)
class Sharing:
    racy: tuple[str, ...] = ()  # variables the reference privatises that the answer shares
    wrong: tuple[tuple[str, str], ...] = ()  # (variable, why), privatised the wrong way

    def __bool__(self) -> bool:
        return bool(self.racy or self.wrong)


def _attributes(cand: OmpPragma, var: str, loop_vars: frozenset[str]) -> set[str]:
    """How the answer's construct shares `var`: "shared", or its privatising clauses
    ("private", "firstprivate", "lastprivate", "reduction:<op>")."""
    attrs = {f"reduction:{op}" for op, names in cand.reductions.items() if var in names}
    for kind, names in (("private", cand.private | loop_vars), ("firstprivate",
                        cand.firstprivate), ("lastprivate", cand.lastprivate)):  # fmt: skip
        if var in names:
            attrs.add(kind)
    if not attrs and var not in cand.shared and cand.default in ("private", "firstprivate"):
        attrs.add(cand.default)
    return attrs or {"shared"}


def _show(attrs: set[str] | list[str]) -> str:
    """{"reduction:+", "private"} -> "private and reduction(+)"."""
    out = [f"reduction({a.split(':', 1)[1]})" if a.startswith("reduction:") else a for a in attrs]
    return " and ".join(sorted(out))


def check_sharing(
    reference: OmpPragma | None, cand: OmpPragma, loop_vars: frozenset[str]
) -> Sharing:
    """The module docstring's rules for the answer's loop construct (nothing to check when
    the answer has none, or the reference is `none`)."""
    if reference is None or not set(cand.directive.split()) & LOOP_WORDS:
        return Sharing()
    needs: dict[str, set[str]] = {}
    for op, names in reference.reductions.items():
        for v in names:
            needs.setdefault(v, set()).add(f"reduction:{op}")
    for kind, names in (("private", reference.private), ("firstprivate",
                        reference.firstprivate), ("lastprivate", reference.lastprivate)):  # fmt: skip
        for v in names:
            needs.setdefault(v, set()).add(kind)
    racy: list[str] = []
    wrong: list[tuple[str, str]] = []
    for var in sorted(needs):
        got = _attributes(cand, var, loop_vars)
        if got == {"shared"}:
            racy.append(var)
            continue
        missing = sorted(need for need in needs[var] if need != "private" and need not in got)
        if missing:
            wrong.append((var, f"{var} is {_show(got)} in the answer; the loop needs "
                          f"{_show(missing)}"))  # fmt: skip
    return Sharing(tuple(racy), tuple(wrong))


def _value(text: str, macros: Mapping[str, str]) -> int | None:
    try:
        return evaluate(tokenize(strip_comments(text)), macros)
    except (Forbidden, ScreenSyntaxError):
        return None  # screened text always tokenizes; a guard


def _condition_fault(
    screened: ScreenedPragma, macros: Mapping[str, str], applies: frozenset[str | None], what: str
) -> str | None:
    """Why an if clause that applies (its modifier in `applies`) may be false, or None."""
    for modifier, text in screened.conditions:
        if modifier not in applies:
            continue
        shown = f"if({modifier + ': ' if modifier else ''}{text})"
        value = _value(text, macros)
        if value is None:
            return (f"{shown} is not a constant the suite can compute: the loop may run "
                    f"{what}")  # fmt: skip
        if value == 0:
            return f"{shown} is false: the loop runs {what}"
    return None


def undeferred(
    reference: OmpPragma | None, screened: ScreenedPragma, macros: Mapping[str, str]
) -> str | None:
    """Why the answer's taskloop may run its tasks undeferred (one after the other, by the
    thread that meets the loop, which a team of 2+ threads does not show), or None."""
    if reference is None or "taskloop" not in screened.words:
        return None
    return _condition_fault(
        screened, macros, frozenset({None, "taskloop"}), "its tasks undeferred, on one thread"
    )


def unvectorised(
    reference: OmpPragma | None, screened: ScreenedPragma, macros: Mapping[str, str]
) -> str | None:
    """Why the answer's simd construct cannot vectorise the loop a simd reference
    vectorises, or None."""
    if reference is None or "simd" not in reference.directive.split():
        return None
    if "simd" not in screened.words:
        return None  # wrong_construct, decided before
    for clause in ("safelen", "simdlen"):
        if (n := screened.constant(clause)) is not None and n < 2:
            return f"{clause}({n}): one iteration at a time, the loop is not vectorised"
    # if(parallel: ...), if(taskloop: ...) do not apply to the simd part
    return _condition_fault(screened, macros, frozenset({None, "simd"}), "without vectorisation")
