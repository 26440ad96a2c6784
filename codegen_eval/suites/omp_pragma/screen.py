"""The accepted grammar of an omp-pragma answer, and its canonical rendering.

    s = screen_pragma(["#pragma omp parallel for reduction(+:sum)"], program_names(src))
    s.lines == ("#pragma omp parallel for reduction ( + : sum )",)   # what gcc compiles

An answer is at most two pragma lines: one construct, or `parallel` followed by one
construct on the next line. A line is `#pragma omp`, an accepted directive (DIRECTIVES),
then clauses from CLAUSES, each with its own argument grammar:

- variable lists (private, firstprivate, lastprivate, shared, copyin, copyprivate,
  nontemporal, reduction/linear/aligned items): the program's variable names, optionally
  with array sections `a[lo:len]` whose bounds are expressions;
- expressions (num_threads, if, final, priority, filter, linear step): `_cscreen`'s
  side-effect-free subset over the program's variables and constant macros (no calls,
  assignments, increments, comma operator, statement expressions, casts or sizeof);
- constant expressions (collapse, ordered(n), safelen, simdlen, hint, aligned alignment,
  schedule chunk, grainsize, num_tasks): literals and the program's constant macros only.
  A chunk or task size computed from variables could make some encounters of the loop
  serial and others not; a constant one is the same at every encounter. The values of
  collapse, safelen, simdlen, the chunk, grainsize and num_tasks are computed (constant.py)
  and kept in `constants`: the scorer judges `safelen(2 - 1)` and `schedule(dynamic, N - 1)`
  by them, so one the suite cannot compute as gcc does (an unsigned or floating literal, a
  value outside int) is refused (non_constant). collapse is compiled as its value;
- keywords (default, proc_bind, order, bind, schedule kind and modifiers, reduction
  operator and modifier, if directive-name modifier).

Comments are whitespace (stripped), line splices are joined before this module sees the
text; everything else that is not in the grammar raises Forbidden (forbidden_construct:<what>)
or ScreenSyntaxError (compile_error:syntax). The compiler only ever sees `lines`: the
accepted tokens re-joined (collapse's computed value in place of its expression), never the
answer's own text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from codegen_eval.suites._cexpr import Expr, ExprPolicy, parse_expression
from codegen_eval.suites._cscreen import (
    Forbidden,
    ProgramNames,
    ScreenSyntaxError,
    Token,
    reject_side_effects,
    split_top,
    strip_comments,
    tokenize,
)
from codegen_eval.suites._screen_guard import screen_guard

from .constant import evaluate

__all__ = ["DIRECTIVES", "ScreenedPragma", "screen_pragma"]

_LOOP_CONSTRUCTS = ("for", "for simd", "simd", "loop", "taskloop", "taskloop simd")
_TASKLOOPS = ("master taskloop", "master taskloop simd", "masked taskloop",
              "masked taskloop simd")  # fmt: skip
# Every accepted directive of one pragma line (combined constructs included).
DIRECTIVES = frozenset(
    {
        *_LOOP_CONSTRUCTS, *_TASKLOOPS,
        "parallel", "parallel for", "parallel for simd", "parallel loop",
        *(f"parallel {t}" for t in _TASKLOOPS),
        "atomic", "critical", "ordered", "single", "master", "masked", "task", "taskgroup",
    }
)  # fmt: skip
# What may follow a first line `#pragma omp parallel` (the construct nested in it).
_SECOND_LINE = frozenset({*_LOOP_CONSTRUCTS, *_TASKLOOPS, "single", "master", "masked", "critical"})
# OpenMP directive words that are not accepted, named so that the refusal says why.
_REFUSED_DIRECTIVES = {
    "declare": "declarative directives run user code (reduction combiners, variants)",
    "threadprivate": "declarative directives are not part of an answer",
    "requires": "declarative directives are not part of an answer",
    "allocate": "allocators are not part of an answer",
    "target": "offloading constructs are outside this suite (host CPU only)",
    "teams": "offloading constructs are outside this suite (host CPU only)",
    "distribute": "offloading constructs are outside this suite (host CPU only)",
    "metadirective": "metadirectives evaluate context selectors",
    "declare_variant": "declarative directives are not part of an answer",
    "error": "the error directive prints messages",
    "sections": "sections do not apply to a loop",
    "section": "sections do not apply to a loop",
    "workshare": "workshare is Fortran only",
    "barrier": "standalone directives do not apply to the loop",
    "flush": "standalone directives do not apply to the loop",
    "taskwait": "standalone directives do not apply to the loop",
    "taskyield": "standalone directives do not apply to the loop",
    "cancel": "cancellation changes the loop's control flow",
    "cancellation": "cancellation changes the loop's control flow",
    "scan": "standalone directives do not apply to the loop",
    "depobj": "standalone directives do not apply to the loop",
    "scope": "not accepted in this suite",
    "interop": "not accepted in this suite",
    "dispatch": "not accepted in this suite",
    "assume": "not accepted in this suite",
    "assumes": "not accepted in this suite",
    "nothing": "not accepted in this suite",
    "tile": "loop transformations are not accepted in this suite",
    "unroll": "loop transformations are not accepted in this suite",
}

_NO_ARG = frozenset(
    {"nowait", "untied", "mergeable", "nogroup", "read", "write", "update", "capture",
     "compare", "seq_cst", "acq_rel", "release", "acquire", "relaxed", "weak", "threads",
     "simd"}
)  # fmt: skip
_LIST = frozenset({"private", "firstprivate", "shared", "copyin", "copyprivate", "nontemporal"})
_EXPR = frozenset({"num_threads", "final", "priority", "filter"})
_CONST = frozenset({"collapse", "safelen", "simdlen", "hint"})
_KEYWORD_ARG = {
    "default": frozenset({"shared", "none", "private", "firstprivate"}),
    "proc_bind": frozenset({"master", "close", "spread", "primary"}),
    "bind": frozenset({"teams", "parallel", "thread"}),
}
_SPECIAL = frozenset(
    {"reduction", "lastprivate", "linear", "aligned", "schedule", "if", "ordered",
     "grainsize", "num_tasks", "order"}
)  # fmt: skip
CLAUSES = _NO_ARG | _LIST | _EXPR | _CONST | set(_KEYWORD_ARG) | _SPECIAL
# OpenMP clauses outside the grammar (named so that `allocate` is not taken for a directive)
_REFUSED_CLAUSES = frozenset(
    {"allocate", "depend", "map", "device", "affinity", "detach", "in_reduction",
     "task_reduction", "uses_allocators", "is_device_ptr", "use_device_ptr", "defaultmap",
     "dist_schedule", "num_teams", "thread_limit", "destroy", "init", "doacross"}
)  # fmt: skip
_REDUCTION_OPS = frozenset({"+", "-", "*", "&", "|", "^", "&&", "||", "max", "min"})
_SCHEDULE_KINDS = frozenset({"static", "dynamic", "guided", "auto", "runtime"})
_SCHEDULE_MODIFIERS = frozenset({"monotonic", "nonmonotonic", "simd"})
_IF_MODIFIERS = frozenset({"parallel", "simd", "taskloop", "task"})
_PRAGMA_HEAD = re.compile(r"^\s*#\s*pragma\s+omp(?=\s|$)(?P<body>.*)$", re.DOTALL)


# Constant clauses whose value decides how the loop is shared out (or vectorised): their
# value is computed (constant.py) and kept, and one the suite cannot compute is refused.
_EVALUATED = {"collapse": "collapse", "safelen": "safelen", "simdlen": "simdlen",
              "schedule": "chunk", "grainsize": "grainsize", "num_tasks": "num_tasks"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScreenedPragma:
    lines: tuple[str, ...]  # canonical lines: what the compiler gets
    directives: tuple[str, ...]  # the directive of each line, e.g. ("parallel", "for")
    schedule_kind: str | None  # the schedule clause's kind, if any
    # values of the _EVALUATED clauses present ("chunk" for the schedule's), and whether a
    # grainsize is `strict:` and whether the schedule has the `simd:` modifier, e.g.
    # (("chunk", 64),), (("grainsize", 4096), ("strict", 1)), (("simd_schedule", 1),)
    constants: tuple[tuple[str, int], ...] = ()
    # every if clause: (directive-name modifier or None, canonical expression)
    conditions: tuple[tuple[str | None, str], ...] = ()

    def constant(self, name: str) -> int | None:
        return dict(self.constants).get(name)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(w for d in self.directives for w in d.split())

    @property
    def timing_dependent(self) -> bool:
        """Whether which thread runs which iteration depends on timing (dynamic, guided,
        auto and runtime schedules, taskloop, loop) rather than only on the team size and
        the schedule (a static worksharing loop)."""
        w = self.words
        if "for" not in w:
            return True
        return self.schedule_kind not in (None, "static")


def _policy(names: ProgramNames, *, constant: bool, what: str) -> ExprPolicy:
    return ExprPolicy(names=names.expression_names(), constant_only=constant, what=what)


def _expr(toks: list[Token], names: ProgramNames, *, constant: bool, what: str) -> str:
    return parse_expression(toks, _policy(names, constant=constant, what=what)).text


def _variable_list(toks: list[Token], names: ProgramNames, clause: str) -> str:
    items = split_top(toks, ",")
    out = []
    for item in items:
        if not item:
            raise ScreenSyntaxError(f"empty item in {clause}(...)")
        head = item[0]
        if head.kind != "ident":
            raise ScreenSyntaxError(f"{clause}(...) lists variables, not {head.text!r}")
        if head.text not in names.variables:
            why = "a macro, not a variable" if head.text in names.macros else (
                "not a variable of this program")  # fmt: skip
            raise Forbidden("identifier", f"`{head.text}` in {clause}(...) is {why}")
        rest = item[1:]
        parts = [head.text]
        while rest:  # array sections: [lower : length], [index], [: length], [lower :]
            if rest[0].text != "[":
                raise ScreenSyntaxError(f"unexpected {rest[0].text!r} after {head.text!r}")
            j = _matching(rest, 0, "[", "]")
            if j < 0:
                raise ScreenSyntaxError(f"unbalanced [ in {clause}(...)")
            inner, rest = rest[1:j], rest[j + 1 :]
            bounds = split_top(inner, ":")
            if len(bounds) > 2:
                raise ScreenSyntaxError(f"array section with two ':' in {clause}(...)")
            rendered = [
                _expr(b, names, constant=False, what="an array section bound") if b else ""
                for b in bounds
            ]
            parts.append("[ " + " : ".join(rendered) + " ]")
        out.append(" ".join(parts))
    return " , ".join(out)


def _matching(toks: list[Token], start: int, open_: str, close: str) -> int:
    """Index of the token closing toks[start] (an `open_`), or -1."""
    depth = 0
    for j in range(start, len(toks)):
        depth += {open_: 1, close: -1}.get(toks[j].text, 0)
        if depth == 0:
            return j
    return -1


def _modifier(toks: list[Token], allowed: frozenset[str]) -> tuple[str | None, list[Token]]:
    """`word :` at the start of an argument, when word is an accepted modifier."""
    if len(toks) >= 2 and toks[0].text in allowed and toks[1].text == ":":
        return toks[0].text, toks[2:]
    return None, toks


def _keyword(toks: list[Token], allowed: frozenset[str], clause: str) -> str:
    if len(toks) != 1 or toks[0].text not in allowed:
        raise ScreenSyntaxError(f"{clause}(...) takes one of {', '.join(sorted(allowed))}")
    return toks[0].text


@dataclass(slots=True)
class _Found:
    """What _clause_arg learns besides the canonical text."""

    constants: dict[str, int]
    conditions: list[tuple[str | None, str]]


def _constant(toks: list[Token], names: ProgramNames, clause: str, found: _Found) -> str:
    """A constant argument: screened, then (for _EVALUATED clauses) computed and kept. Only
    `collapse` is given to the compiler as its value: the clause parser reads an integer."""
    expr: Expr = parse_expression(toks, _policy(names, constant=True, what=f"{clause}(...)"))
    if clause not in _EVALUATED:
        return expr.text
    value = evaluate(expr.tokens, names.macros)
    if value is None:
        raise Forbidden("non_constant", f"{clause}(...) must be an int constant the suite can "
                        "compute (signed integer literals and the program's constant macros, "
                        "no value outside int)")  # fmt: skip
    found.constants[_EVALUATED[clause]] = value
    return str(value) if clause == "collapse" else expr.text


def _clause_arg(
    name: str, toks: list[Token], names: ProgramNames, found: _Found
) -> tuple[str, str | None]:
    """(canonical argument text, schedule kind if this is a schedule clause)."""
    if name in _LIST:
        return _variable_list(toks, names, name), None
    if name in _EXPR:
        return _expr(toks, names, constant=False, what=f"{name}(...)"), None
    if name in _CONST or name == "ordered":
        return _constant(toks, names, name, found), None
    if name in _KEYWORD_ARG:
        return _keyword(toks, _KEYWORD_ARG[name], name), None
    if name == "if":
        mod, rest = _modifier(toks, _IF_MODIFIERS)
        body = _expr(rest, names, constant=False, what="if(...)")
        found.conditions.append((mod, body))
        return (f"{mod} : {body}" if mod else body), None
    if name in ("grainsize", "num_tasks"):
        mod, rest = _modifier(toks, frozenset({"strict"}))
        body = _constant(rest, names, name, found)
        if mod:
            found.constants["strict"] = 1
        return (f"{mod} : {body}" if mod else body), None
    if name == "order":
        mod, rest = _modifier(toks, frozenset({"reproducible", "unconstrained"}))
        body = _keyword(rest, frozenset({"concurrent"}), name)
        return (f"{mod} : {body}" if mod else body), None
    if name == "lastprivate":
        mod, rest = _modifier(toks, frozenset({"conditional"}))
        body = _variable_list(rest, names, name)
        return (f"{mod} : {body}" if mod else body), None
    if name == "reduction":
        parts = split_top(toks, ":")
        if len(parts) != 2:
            raise ScreenSyntaxError("reduction(...) needs `operator : variables`")
        head = split_top(parts[0], ",")
        op_toks = head[-1]
        if len(head) > 2 or len(op_toks) != 1 or op_toks[0].text not in _REDUCTION_OPS:
            raise ScreenSyntaxError("reduction operator must be one of + - * & | ^ && || "
                                    "max min")  # fmt: skip
        prefix = ""
        if len(head) == 2:
            mod = _keyword(head[0], frozenset({"inscan", "task", "default"}), "reduction")
            prefix = f"{mod} , "
        return f"{prefix}{op_toks[0].text} : {_variable_list(parts[1], names, name)}", None
    if name in ("linear", "aligned"):
        parts = split_top(toks, ":")
        if len(parts) > 2:
            raise ScreenSyntaxError(f"{name}(...) has more than one ':'")
        body = _variable_list(parts[0], names, name)
        if len(parts) == 2:
            tail = _expr(parts[1], names, constant=name == "aligned", what=f"{name} step")
            body = f"{body} : {tail}"
        return body, None
    if name == "schedule":
        parts = split_top(toks, ":")
        if len(parts) > 2:
            raise ScreenSyntaxError("schedule(...) has more than one ':'")
        mods = ""
        if len(parts) == 2:
            words = split_top(parts[0], ",")
            if len(words) > 2 or any(
                len(w) != 1 or w[0].text not in _SCHEDULE_MODIFIERS for w in words
            ):
                raise ScreenSyntaxError("schedule modifiers are monotonic, nonmonotonic, simd")
            mods = " , ".join(w[0].text for w in words) + " : "
            if any(w[0].text == "simd" for w in words):
                found.constants["simd_schedule"] = 1  # chunks rounded up to the vector length
        kind_chunk = split_top(parts[-1], ",")
        if len(kind_chunk) > 2:
            raise ScreenSyntaxError("schedule(kind[, chunk]) has too many ','")
        kind = _keyword(kind_chunk[0], _SCHEDULE_KINDS, "schedule")
        text = mods + kind
        if len(kind_chunk) == 2:
            text += " , " + _constant(kind_chunk[1], names, "schedule", found)
        return text, kind
    raise AssertionError(name)  # pragma: no cover - CLAUSES and this function agree


def _directive(toks: list[Token]) -> tuple[str, int]:
    """The longest accepted directive at the start of `toks`, and how many tokens it took."""
    words: list[str] = []
    for t in toks:
        cand = " ".join([*words, t.text])
        if t.kind == "ident" and any(d == cand or d.startswith(cand + " ") for d in DIRECTIVES):
            words.append(t.text)
        else:
            break
    # back off to the longest complete directive ("parallel master" -> "parallel")
    while words and " ".join(words) not in DIRECTIVES:
        words.pop()
    if not words:
        first = toks[0].text if toks else ""
        if first in _REFUSED_DIRECTIVES:
            raise Forbidden("directive", f"`#pragma omp {first}` is not accepted: "
                            f"{_REFUSED_DIRECTIVES[first]}")  # fmt: skip
        if first.lower() in DIRECTIVES or first.lower() in _REFUSED_DIRECTIVES:
            raise ScreenSyntaxError("OpenMP directive names are lowercase")
        raise ScreenSyntaxError(f"unknown OpenMP directive {first!r}")
    return " ".join(words), len(words)


def _screen_line(line: str, names: ProgramNames, found: _Found) -> tuple[str, str, str | None]:
    m = _PRAGMA_HEAD.match(line)
    if not m:
        raise ScreenSyntaxError(f"not an OpenMP pragma line: {line.strip()[:80]!r}")
    first = re.match(r"\s*([A-Za-z_]\w*)", m["body"])
    if first and first.group(1) in _REFUSED_DIRECTIVES:  # named before its arguments are
        _directive([Token("ident", first.group(1))])  # looked at: raises Forbidden
    toks = tokenize(strip_comments(m["body"]))
    reject_side_effects(toks)
    directive, used = _directive(toks)
    out = [f"#pragma omp {directive}"]
    k = used
    if directive == "critical" and k < len(toks) and toks[k].text == "(":
        if k + 2 >= len(toks) or toks[k + 1].kind != "ident" or toks[k + 2].text != ")":
            raise ScreenSyntaxError("critical(name) takes one name")
        out[0] += f" ( {toks[k + 1].text} )"
        k += 3
    schedule_kind = None
    seen: set[str] = set()
    while k < len(toks):
        t = toks[k]
        if t.text == ",":
            k += 1
            continue
        if t.kind != "ident":
            raise ScreenSyntaxError(f"unexpected {t.text!r} among the clauses")
        name = t.text
        if name not in CLAUSES:
            if name in _REFUSED_CLAUSES:
                raise Forbidden("clause", f"clause `{name}` is not accepted in this suite")
            if name in _REFUSED_DIRECTIVES or name in {w for d in DIRECTIVES for w in d.split()}:
                raise Forbidden("directive", f"`{directive} {name}` is not an accepted "
                                "directive")  # fmt: skip
            if name.lower() in CLAUSES:
                raise ScreenSyntaxError("OpenMP clause names are lowercase")
            raise Forbidden("clause", f"clause `{name}` is not accepted in this suite")
        k += 1
        arg: list[Token] | None = None
        if k < len(toks) and toks[k].text == "(":
            j = _matching(toks, k, "(", ")")
            if j < 0:
                raise ScreenSyntaxError(f"unbalanced parentheses in {name}(...)")
            arg, k = toks[k + 1 : j], j + 1
        if arg is None:
            if name not in _NO_ARG and name != "ordered":
                raise ScreenSyntaxError(f"clause {name} needs an argument")
            out.append(name)
            continue
        if name in _NO_ARG:
            raise ScreenSyntaxError(f"clause {name} takes no argument")
        if name in seen and name in ("num_threads", "if", "schedule", "collapse", "default"):
            raise ScreenSyntaxError(f"clause {name} given twice")
        seen.add(name)
        text, kind = _clause_arg(name, arg, names, found)
        schedule_kind = kind or schedule_kind
        out.append(f"{name} ( {text} )")
    return " ".join(out), directive, schedule_kind


@screen_guard
def screen_pragma(lines: Sequence[str], names: ProgramNames) -> ScreenedPragma:
    """Screen an answer's pragma lines (continuations already joined) against the grammar
    above. Raises Forbidden or ScreenSyntaxError; returns the canonical lines."""
    if not lines:
        raise ScreenSyntaxError("no pragma")
    if len(lines) > 2:
        raise Forbidden("directive", f"{len(lines)} pragma lines: an answer is one construct, "
                        "or `parallel` followed by one construct")  # fmt: skip
    rendered: list[str] = []
    directives: list[str] = []
    schedule_kind = None
    found = _Found({}, [])
    for line in lines:
        text, directive, kind = _screen_line(line, names, found)
        rendered.append(text)
        directives.append(directive)
        schedule_kind = kind or schedule_kind
    if len(directives) == 2 and (directives[0] != "parallel" or directives[1] not in _SECOND_LINE):
        raise Forbidden("directive", f"`{directives[0]}` followed by `{directives[1]}` is not "
                        "accepted: the first of two lines must be `parallel`, the second a "
                        "loop, single, master, masked or critical construct")  # fmt: skip
    return ScreenedPragma(tuple(rendered), tuple(directives), schedule_kind,
                          tuple(sorted(found.constants.items())), tuple(found.conditions))  # fmt: skip
