"""OpenMP pragma text -> a normalized structure, and clause-by-clause comparison.

    p = parse_pragma("#pragma omp parallel for \\\n    reduction(+ : s) private(t)")
    p.directive == "parallel for"; p.reductions == {"+": {"s"}}; p.private == {"t"}
    compare(reference, candidate) -> {"clause_precision": ..., "exact_match": ...}

Normalization (what counts as "the same pragma"):
- line continuations are joined, spacing and clause order do not matter, names are
  case-sensitive (C) but directive and clause keywords are not;
- `#pragma omp parallel` followed by `#pragma omp for` on the next line is the combined
  construct `parallel for` (clauses united), as OpenMP defines it;
- reduction `-` is `+` (OpenMP 5.2 deprecates `-`; the semantics are identical);
- `schedule(dynamic, 1)` and `schedule(guided, 1)` are the kind alone (1 is the default
  chunk), `collapse(1)` is no collapse, `atomic update` is `atomic`;
- `shared(...)` and `default(shared)` restate the default for variables declared outside the
  construct and are not scored; `private(i)` of a loop iteration variable (predetermined
  private) is dropped when the caller passes the loop variables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codegen_eval.errors import CodegenEvalError

_PRAGMA = re.compile(r"^\s*#\s*pragma\s+omp\b(?P<body>.*)$", re.IGNORECASE)
# Words that may continue a combined/composite directive name after its first word.
_COMBINABLE = frozenset(
    {"parallel", "for", "do", "simd", "loop", "taskloop", "distribute", "teams", "target",
     "sections", "masked", "master"}
)  # fmt: skip
# Directives whose next pragma line names the construct they combine with.
_COMBINES_WITH_NEXT = frozenset({"parallel", "target", "teams", "target teams"})
_REDUCTION_OP_ALIASES = {"-": "+"}
_SERIALIZING_IF = re.compile(r"^(?:parallel\s*:\s*)?(?:0+|false|0\s*[<>]=?\s*0)$", re.I)


class PragmaSyntaxError(CodegenEvalError, ValueError):
    pass


@dataclass(frozen=True, slots=True)
class OmpPragma:
    directive: str  # "parallel for", "atomic", "critical", "simd", ... ("" when absent)
    private: frozenset[str] = frozenset()
    firstprivate: frozenset[str] = frozenset()
    lastprivate: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()
    reductions: dict[str, frozenset[str]] = field(default_factory=dict)  # op -> variables
    schedule: tuple[str, str | None] | None = None  # (kind, chunk or None)
    collapse: int = 1
    default: str | None = None
    num_threads: str | None = None
    if_clause: str | None = None
    other: frozenset[str] = frozenset()  # nowait, ordered, proc_bind(close), critical name...

    @property
    def parallel(self) -> bool:
        return "parallel" in self.directive.split()

    @property
    def serializing(self) -> bool:
        """The literal clauses if(0) / num_threads(1), as text. The scorer does not use this:
        it observes the team sizes (`num_threads(2-1)` is just as serial)."""
        if self.num_threads is not None and self.num_threads.strip("() ") == "1":
            return True
        return self.if_clause is not None and bool(_SERIALIZING_IF.match(self.if_clause))

    def facts(self, implicit_private: frozenset[str] = frozenset()) -> frozenset[str]:
        """The scored clause facts: one string per (clause, item)."""
        out: set[str] = set()
        out |= {f"private:{v}" for v in self.private - implicit_private}
        out |= {f"firstprivate:{v}" for v in self.firstprivate}
        out |= {f"lastprivate:{v}" for v in self.lastprivate}
        for op, names in self.reductions.items():
            out |= {f"reduction:{op}:{v}" for v in names}
        if self.schedule is not None:
            out.add(f"schedule:{self.schedule[0]}")
            if self.schedule[1] is not None:
                out.add(f"schedule_chunk:{self.schedule[1]}")
        if self.collapse != 1:
            out.add(f"collapse:{self.collapse}")
        if self.default is not None and self.default != "shared":
            out.add(f"default:{self.default}")
        if self.num_threads is not None:
            out.add(f"num_threads:{self.num_threads}")
        if self.if_clause is not None:
            out.add(f"if:{self.if_clause}")
        out |= {f"other:{o}" for o in self.other}
        return frozenset(out)


def _squash(text: str) -> str:
    return "".join(text.split())


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside parentheses and brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _clauses(text: str) -> list[tuple[str, str | None]]:
    """`reduction(+:s) nowait, private(a,b)` -> [("reduction", "+:s"), ("nowait", None), ...]"""
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace() or text[i] == ",":
            i += 1
            continue
        m = re.match(r"[A-Za-z_]\w*", text[i:])
        if not m:
            raise PragmaSyntaxError(f"unexpected {text[i:]!r} in OpenMP clauses")
        name = m.group(0).lower()
        i += m.end()
        while i < n and text[i] in " \t":
            i += 1
        arg = None
        if i < n and text[i] == "(":
            depth, j = 0, i
            while j < n:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            if depth != 0:
                raise PragmaSyntaxError(f"unbalanced parentheses in clause {name!r}")
            arg = text[i + 1 : j].strip()
            i = j + 1
        out.append((name, arg))
    return out


def logical_lines(text: str) -> list[str]:
    """Physical lines with backslash-newline continuations joined."""
    return re.sub(r"\\[ \t]*\r?\n", " ", text).splitlines()


def _parse_one(line: str) -> tuple[list[str], list[tuple[str, str | None]]]:
    m = _PRAGMA.match(line)
    if not m:
        raise PragmaSyntaxError(f"not an OpenMP pragma: {line.strip()!r}")
    body = re.sub(r"/\*.*?\*/|//.*$", " ", m["body"]).strip()
    words: list[str] = []
    while True:
        wm = re.match(r"([A-Za-z_]\w*)\s*", body)
        if not wm:
            break
        word = wm.group(1).lower()
        if words and word not in _COMBINABLE:
            break
        if words and word in ("target", "teams") and words[-1] != "target":
            break
        words.append(word)
        body = body[wm.end() :]
        if not words or words[0] not in _COMBINABLE:
            break  # atomic, critical, barrier...: one word, then clauses
    if words in (["critical"], ["flush"]) and body.startswith("("):
        # critical(name) / flush(list): a parenthesized argument of the directive itself
        return words, [("directive_arg", None), *_clauses("directive_arg" + body)[1:]]
    return words, _clauses(body)


def parse_pragma(text: str, *, implicit_private: frozenset[str] = frozenset()) -> OmpPragma:
    """Parse one or more consecutive `#pragma omp` lines into one OmpPragma. Raises
    PragmaSyntaxError when a line is not an OpenMP pragma or its clauses do not parse."""
    lines = [ln for ln in logical_lines(text) if ln.strip()]
    if not lines:
        raise PragmaSyntaxError("no pragma")
    words: list[str] = []
    clauses: list[tuple[str, str | None]] = []
    for k, line in enumerate(lines):
        w, c = _parse_one(line)
        if k and " ".join(words) not in _COMBINES_WITH_NEXT:
            raise PragmaSyntaxError(
                f"'#pragma omp {' '.join(words)}' does not combine with the next pragma line"
            )
        words += w
        clauses += c
    return _build(" ".join(words), clauses, implicit_private)


def _names(arg: str | None) -> frozenset[str]:
    return frozenset(_squash(x) for x in _split_top(arg or ""))


def _build(
    directive: str, clauses: list[tuple[str, str | None]], implicit_private: frozenset[str]
) -> OmpPragma:
    private: set[str] = set()
    firstprivate: set[str] = set()
    lastprivate: set[str] = set()
    shared: set[str] = set()
    reductions: dict[str, set[str]] = {}
    schedule = None
    collapse = 1
    default = num_threads = if_clause = None
    other: set[str] = set()
    for name, arg in clauses:
        if name == "private":
            private |= _names(arg) - implicit_private
        elif name == "firstprivate":
            firstprivate |= _names(arg)
        elif name == "lastprivate":
            body = arg or ""
            if re.match(r"\s*conditional\s*:", body):
                body = body.split(":", 1)[1]
            lastprivate |= _names(body)
        elif name == "shared":
            shared |= _names(arg)
        elif name == "reduction":
            if not arg or ":" not in arg:
                raise PragmaSyntaxError(f"reduction({arg}) has no ':'")
            head, items = arg.split(":", 1)
            op = _squash(_split_top(head)[-1]).lower() if _split_top(head) else ""
            op = _REDUCTION_OP_ALIASES.get(op, op)
            reductions.setdefault(op, set()).update(_names(items))
        elif name == "schedule":
            body = arg or ""
            if ":" in body:  # monotonic:/nonmonotonic: modifiers do not change the answer
                body = body.split(":", 1)[1]
            parts = _split_top(body)
            kind = parts[0].lower() if parts else ""
            chunk = _squash(parts[1]) if len(parts) > 1 else None
            if kind in ("dynamic", "guided") and chunk == "1":
                chunk = None
            schedule = (kind, chunk)
        elif name == "collapse":
            try:
                collapse = int((arg or "1").strip(), 0)
            except ValueError as exc:
                raise PragmaSyntaxError(f"collapse({arg}) is not an integer") from exc
        elif name == "default":
            default = (arg or "").strip().lower()
        elif name == "num_threads":
            num_threads = _squash(arg or "")
        elif name == "if":
            if_clause = _squash(arg or "")
        elif directive == "atomic" and name == "update" and arg is None:
            continue  # `atomic update` is `atomic`
        elif name == "directive_arg":
            continue  # a critical section's name does not change what the program computes
        else:
            other.add(name if arg is None else f"{name}({_squash(arg)})")
    return OmpPragma(
        directive=directive,
        private=frozenset(private),
        firstprivate=frozenset(firstprivate),
        lastprivate=frozenset(lastprivate),
        shared=frozenset(shared),
        reductions={op: frozenset(v) for op, v in reductions.items()},
        schedule=schedule,
        collapse=collapse,
        default=default,
        num_threads=num_threads,
        if_clause=if_clause,
        other=frozenset(other),
    )


def _prf(ref: frozenset[str], cand: frozenset[str]) -> tuple[float, float]:
    if not ref and not cand:
        return 1.0, 1.0
    hit = len(ref & cand)
    precision = hit / len(cand) if cand else 1.0 if not ref else 0.0
    recall = hit / len(ref) if ref else 1.0
    return precision, recall


def compare(
    reference: OmpPragma | None,
    candidate: OmpPragma | None,
    implicit_private: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """Clause metrics of `candidate` against `reference`; None stands for "no pragma".

    clause_precision/recall/f1 over all facts, `<kind>_precision`/`<kind>_recall` for every
    clause kind either side uses, directive_match, exact_match."""
    ref_facts = reference.facts(implicit_private) if reference else frozenset()
    cand_facts = candidate.facts(implicit_private) if candidate else frozenset()
    ref_dir = reference.directive if reference else "none"
    cand_dir = candidate.directive if candidate else "none"
    precision, recall = _prf(ref_facts, cand_facts)
    if reference is None or candidate is None:
        # "no pragma" vs a pragma: nothing of the answer is right
        precision, recall = (1.0, 1.0) if reference is candidate else (0.0, 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    metrics = {
        "directive_match": float(ref_dir == cand_dir),
        "clause_precision": round(precision, 4),
        "clause_recall": round(recall, 4),
        "clause_f1": round(f1, 4),
        "exact_match": float(ref_dir == cand_dir and ref_facts == cand_facts),
    }
    kinds = {f.split(":", 1)[0] for f in ref_facts | cand_facts}
    for kind in sorted(kinds):
        r = frozenset(f for f in ref_facts if f.split(":", 1)[0] == kind)
        c = frozenset(f for f in cand_facts if f.split(":", 1)[0] == kind)
        p, rc = _prf(r, c)
        metrics[f"{kind}_precision"] = round(p, 4)
        metrics[f"{kind}_recall"] = round(rc, 4)
    return metrics
