"""The accepted form of one mpi-completion answer call, and its canonical text.

    call = screen_call("MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);", program_names(src))
    call.text == "MPI_Bcast(& n, 1, MPI_INT, 0, MPI_COMM_WORLD);"   # what is inserted

An answer call is one call of a function in FUNCTIONS (point-to-point and collective
communication, their nonblocking forms, Wait/Waitall/Probe/Request_free), with exactly its
arguments, each an expression of `_cscreen`'s side-effect-free subset (plus `&`, unary `*`,
`.`/`->`, casts and `sizeof` to plain types) over the program's variables and constant
macros, `NULL` and MPI's upper-case constants. Each argument is then checked against what
its parameter is for (FUNCTIONS gives the role of every parameter):

- buffers carry program data only: no status, request or other handle variable (a received
  status holds the sender's tag, which is an answer's literal: a status used as a buffer
  would let an answer write a number it chose into the program's result), never a set-up
  variable (`rank`, `size`, `argc`, `argv`: an in-place MPI_LAND over `size` made it 1),
  a cast only around the whole argument (`(char *)&x + 3` addresses bytes of a value), and
  a datatype that describes the buffer's element type (MPI_BYTE over a long places single
  bytes; both let an answer assemble a number of its choosing from the program's bytes);
- statuses and requests name variables of type MPI_Status / MPI_Request (or the IGNORE
  constants), without casts (a cast would let MPI write a status over any variable);
- datatypes, operations, communicators and count/displacement arrays take no casts.

Refused: every other MPI function (MPI_Abort ends the job with a status of its choosing,
MPI_File_* reads and writes files, /dev/stdout included, Init/Finalize/Comm_rank/Comm_size
set the program up and are never removed, Get_count/Test/Iprobe write numbers an answer
controls into its variables, Reduce_local is local arithmetic: chained, it computed any
constant), and what `_cscreen` refuses (calls in arguments, assignments,
statement expressions, strings, non-ASCII, ...). Refusals are Forbidden
(forbidden_construct:<what>); malformed calls ScreenSyntaxError.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from codegen_eval.suites._cexpr import Expr, ExprPolicy, parse_expression
from codegen_eval.suites._cscreen import (
    Forbidden,
    ProgramNames,
    ScreenSyntaxError,
    Token,
    program_names,
    reject_side_effects,
    split_top,
    strip_comments,
    tokenize,
)
from codegen_eval.suites._csource import call_statements
from codegen_eval.suites._csource import parse as ts_parse
from codegen_eval.suites._screen_guard import screen_guard

from .problems import KEPT_CALLS

__all__ = ["FUNCTIONS", "HANDLE_TYPES", "ScreenedCall", "check_placement", "screen_call",
           "setup_variables"]  # fmt: skip

_P2P = ("buf", "int", "type", "int", "int", "comm")
_RED = ("buf", "buf", "int", "type", "op", "comm")
_GATHER = ("buf", "int", "type", "buf", "int", "type")
_ALLGATHERV = ("buf", "int", "type", "buf", "ints", "ints", "type", "comm")
_ALLTOALLV = ("buf", "ints", "ints", "type", "buf", "ints", "ints", "type", "comm")
_BLOCKING: dict[str, tuple[str, ...]] = {
    "MPI_Barrier": ("comm",),
    "MPI_Bcast": ("buf", "int", "type", "int", "comm"),
    "MPI_Reduce": ("buf", "buf", "int", "type", "op", "int", "comm"),
    "MPI_Allreduce": _RED,
    "MPI_Scan": _RED,
    "MPI_Exscan": _RED,
    "MPI_Reduce_scatter_block": _RED,
    "MPI_Reduce_scatter": ("buf", "buf", "ints", "type", "op", "comm"),
    "MPI_Scatter": (*_GATHER, "int", "comm"),
    "MPI_Gather": (*_GATHER, "int", "comm"),
    "MPI_Allgather": (*_GATHER, "comm"),
    "MPI_Alltoall": (*_GATHER, "comm"),
    "MPI_Scatterv": ("buf", "ints", "ints", "type", "buf", "int", "type", "int", "comm"),
    "MPI_Gatherv": ("buf", "int", "type", "buf", "ints", "ints", "type", "int", "comm"),
    "MPI_Allgatherv": _ALLGATHERV,
    "MPI_Alltoallv": _ALLTOALLV,
}
# The role of each parameter of every accepted function, in order.
FUNCTIONS: dict[str, tuple[str, ...]] = {
    "MPI_Send": _P2P,
    "MPI_Ssend": _P2P,
    "MPI_Rsend": _P2P,
    "MPI_Isend": (*_P2P, "request"),
    "MPI_Issend": (*_P2P, "request"),
    "MPI_Irsend": (*_P2P, "request"),
    "MPI_Recv": (*_P2P, "status"),
    "MPI_Irecv": (*_P2P, "request"),
    "MPI_Sendrecv": (*_P2P[:5], *_P2P[:5], "comm", "status"),
    "MPI_Sendrecv_replace": ("buf", "int", "type", "int", "int", "int", "int", "comm", "status"),
    "MPI_Probe": ("int", "int", "comm", "status"),
    "MPI_Wait": ("request", "status"),
    "MPI_Waitall": ("int", "requests", "statuses"),
    "MPI_Request_free": ("request",),
    **_BLOCKING,
    # nonblocking collectives: the blocking signature plus a request
    **{f"MPI_I{name[4].lower()}{name[5:]}": (*roles, "request")
       for name, roles in _BLOCKING.items()},
}  # fmt: skip
_REFUSED_WHY = {
    "MPI_Abort": "it ends the job with an exit status of the answer's choosing",
    "MPI_Init": "set-up is part of the program and never removed",
    "MPI_Init_thread": "set-up is part of the program and never removed",
    "MPI_Finalize": "set-up is part of the program and never removed",
    "MPI_Comm_rank": "set-up is part of the program and never removed",
    "MPI_Comm_size": "set-up is part of the program and never removed",
    "MPI_Get_count": "it writes a count the answer controls into a variable",
    "MPI_Get_elements": "it writes a count the answer controls into a variable",
    "MPI_Iprobe": "it writes a flag into a variable",
    "MPI_Test": "it writes a flag into a variable",
    "MPI_Testall": "it writes a flag into a variable",
    "MPI_Testany": "it writes a flag into a variable",
    "MPI_Testsome": "it writes a flag into a variable",
    "MPI_Waitany": "it writes an index into a variable",
    "MPI_Waitsome": "it writes indices into variables",
    "MPI_Reduce_local": "it is local arithmetic, not communication: chained, it computes "
    "values of the answer's choosing into the program's variables",
}
HANDLE_TYPES = frozenset(
    {"MPI_Status", "MPI_Request", "MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group",
     "MPI_Win", "MPI_File", "MPI_Info", "MPI_Errhandler", "MPI_Message", "MPI_Session"}
)  # fmt: skip
_CAST_TYPES = frozenset({"size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
                         "uint16_t", "uint32_t", "uint64_t", "MPI_Aint"})  # fmt: skip
_CONSTANT = re.compile(r"MPI_[A-Z][A-Z0-9_]*")
_REFUSED_CONSTANTS = {
    "MPI_BOTTOM": "MPI_BOTTOM addresses absolute memory",
}
# Which constants a role accepts (beyond the program's own values).
_ROLE_CONSTANTS = {
    "buf": frozenset({"MPI_IN_PLACE", "NULL"}),
    "status": frozenset({"MPI_STATUS_IGNORE"}),
    "statuses": frozenset({"MPI_STATUSES_IGNORE"}),
    "request": frozenset(),
    "requests": frozenset(),
}
# The declared type that a role's variables must have (the compiler checks the others).
_ROLE_TYPES = {
    "status": "MPI_Status",
    "statuses": "MPI_Status",
    "request": "MPI_Request",
    "requests": "MPI_Request",
}
_SINGLE_NAME_ROLES = frozenset({"type", "op", "comm"})
_NO_CAST_ROLES = frozenset({"status", "statuses", "request", "requests", "type", "op", "comm",
                            "ints"})  # fmt: skip
# The MPI datatypes that describe a buffer of each C element type (declared type, `int` and
# `signed` dropped where C allows). A buffer's datatype must be one of them: with MPI_BYTE
# or a narrower type over a wider variable, an answer places single bytes of other values
# into it and can assemble a number of its choosing. The first is the one a message names.
_DATATYPES: dict[str, tuple[str, ...]] = {
    # (MPI_2INT is a pair of ints: over an int it writes past the variable; never accepted)
    "int": ("MPI_INT", "MPI_INT32_T"),
    "long": ("MPI_LONG", "MPI_INT64_T", "MPI_LONG_LONG", "MPI_LONG_LONG_INT"),
    "long long": ("MPI_LONG_LONG", "MPI_LONG_LONG_INT", "MPI_INT64_T", "MPI_LONG"),
    "short": ("MPI_SHORT", "MPI_INT16_T"),
    "unsigned": ("MPI_UNSIGNED", "MPI_UINT32_T"),
    "unsigned long": ("MPI_UNSIGNED_LONG", "MPI_UINT64_T", "MPI_UNSIGNED_LONG_LONG"),
    "unsigned long long": ("MPI_UNSIGNED_LONG_LONG", "MPI_UINT64_T", "MPI_UNSIGNED_LONG"),
    "double": ("MPI_DOUBLE",),
    "float": ("MPI_FLOAT",),
    "long double": ("MPI_LONG_DOUBLE",),
    "char": ("MPI_CHAR", "MPI_SIGNED_CHAR", "MPI_BYTE"),
    "unsigned char": ("MPI_UNSIGNED_CHAR", "MPI_BYTE"),
}  # fmt: skip
_TYPE_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed",
                         "unsigned", "_Bool", "const", "volatile"})  # fmt: skip
_BINARY_OPERATORS = frozenset({"||", "&&", "|", "^", "&", "==", "!=", "<", ">", "<=", ">=",
                               "<<", ">>", "+", "-", "*", "/", "%", "?"})  # fmt: skip


class _Names(Mapping[str, str]):
    """The identifiers an answer may use: the program's variables and constant macros (or,
    without a program, any name), NULL and MPI's upper-case constants."""

    def __init__(self, names: ProgramNames | None) -> None:
        self.own = names.expression_names() if names is not None else None

    def __getitem__(self, key: str) -> str:
        if key in _REFUSED_CONSTANTS:
            raise Forbidden("identifier", _REFUSED_CONSTANTS[key])
        if key == "NULL" or (_CONSTANT.fullmatch(key) and not key.endswith("_FN")):
            return "constant"
        if self.own is None:
            return "variable"
        return self.own[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.own or {})

    def __len__(self) -> int:
        return len(self.own or {})

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True


@dataclass(frozen=True, slots=True)
class ScreenedCall:
    name: str
    args: tuple[str, ...]  # canonical argument texts

    @property
    def text(self) -> str:
        return f"{self.name}({', '.join(self.args)});"


def setup_variables(program: str) -> frozenset[str]:
    """The variables that the program's kept set-up calls (MPI_Init, MPI_Comm_rank,
    MPI_Comm_size) are given: `argc`, `argv`, `rank`, `size`. Everything the program
    divides between ranks hangs on them, so no answer call may use them as a buffer."""
    declared = program_names(program).variables
    out: set[str] = set()
    for call in call_statements(program, "MPI_"):
        if call.name in KEPT_CALLS:
            for arg in call.args:
                out.update(t.text for t in tokenize(arg) if t.text in declared)
    return frozenset(out)


def size_variables(program: str) -> frozenset[str]:
    """The variables the program's MPI_Comm_size calls fill (`size`)."""
    declared = program_names(program).variables
    out: set[str] = set()
    for call in call_statements(program, "MPI_Comm_size"):
        if call.name == "MPI_Comm_size" and len(call.args) == 2:
            out.update(t.text for t in tokenize(call.args[1]) if t.text in declared)
    return frozenset(out)


# What an argument may do with the communicator's size: add, subtract, multiply by a value
# that does not depend on it, divide or take the remainder by it. Anything else can give one
# value at the rank counts the scorer runs (2, 3, 4) and another elsewhere (`size / 5`,
# `size > 4 ? 1 : 0`, `(size - 2) * (size - 3) * (size - 4)`): right at np 2-4 only.
_SIZE_SELECTS = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||", "?", "u!", "<<", ">>",
                           "&", "|", "^", "u~"})  # fmt: skip


def _size_fault(expr: Expr, sizes: frozenset[str]) -> str | None:
    size_names = set(sizes)
    for o in expr.operations:
        right = frozenset(t.text for t in o.right if t.kind == "ident")
        if o.op in _SIZE_SELECTS and (o.left | right) & size_names:
            shown = "?:" if o.op == "?" else o.op.removeprefix("u")
            return f"`{shown}` on the communicator's size"
        if o.op == "*" and o.left & size_names and right & size_names:
            return "a product of two terms in the communicator's size"
        if o.op in ("/", "%") and (o.left | right) & size_names:
            if not (len(o.right) == 1 and o.right[0].text in size_names):
                return f"`{o.op}` by anything but the communicator's size itself"
    return None


def _element_type(declared: str) -> str:
    """`long int` -> `long`, `signed char` stays, `const int` -> `int`."""
    words = [w for w in declared.split() if w not in ("const", "volatile", "static")]
    if words == ["signed"]:
        return "int"
    if "char" not in words:
        words = [w for w in words if w != "signed"]
    if len(words) > 1 and "int" in words:
        words.remove("int")
    return " ".join(words)


def _buffer_objects(toks: Sequence[Token], variables: Mapping[str, str]) -> list[str]:
    """The program variables that a buffer argument may point into: every variable it names
    except in a subscript, after `.`/`->`, in `sizeof`, or in the condition of a top-level
    `?:` (`rank == 0 ? MPI_IN_PLACE : &x` points into x only). When unsure, a name counts
    as an object (a refusal, never a miss)."""
    start = depth = 0
    for k, t in enumerate(toks):
        depth += t.text in ("(", "[")
        depth -= t.text in (")", "]")
        if t.text == "?" and depth == 0:
            start = k + 1
            break
    out: list[str] = []
    brackets = 0
    skip_until = -1
    for k in range(start, len(toks)):
        t = toks[k]
        if k <= skip_until:
            continue
        if t.text == "sizeof":
            skip_until = k + 1
            if k + 1 < len(toks) and toks[k + 1].text == "(":
                level = 0
                for j in range(k + 1, len(toks)):
                    level += (toks[j].text == "(") - (toks[j].text == ")")
                    if level == 0:
                        skip_until = j
                        break
            continue
        brackets += (t.text == "[") - (t.text == "]")
        after_member = k > 0 and toks[k - 1].text in (".", "->")
        if t.kind == "ident" and t.text in variables and not brackets and not after_member:
            out.append(t.text)
    return out


def _check_buffer_cast(where: str, toks: Sequence[Token], policy: ExprPolicy) -> None:
    """A cast in a buffer must apply to the whole argument (`(void *)&x[k]`): a cast inside
    it (`(char *)&total + 3`) addresses single bytes of a variable."""
    types = _TYPE_WORDS | HANDLE_TYPES | _CAST_TYPES
    if len(toks) < 2 or toks[0].text != "(" or toks[1].text not in types:
        raise Forbidden("cast", f"{where}: a cast must apply to the whole buffer argument, "
                        "as in `(void *)&x[k]`, not to a part of it")  # fmt: skip
    close = next(k for k, t in enumerate(toks) if t.text == ")")
    rest = list(toks[close + 1 :])
    depth = 0
    operand_ended = False
    for t in rest:
        if depth == 0 and t.text in _BINARY_OPERATORS and operand_ended:
            raise Forbidden("cast", f"{where}: a cast must apply to the whole buffer "
                            "argument (arithmetic after a cast addresses bytes of a value)")  # fmt: skip
        depth += t.text in ("(", "[")
        depth -= t.text in (")", "]")
        operand_ended = t.kind in ("ident", "number") or t.text in (")", "]")
    if parse_expression(rest, policy).has_cast:
        raise Forbidden("cast", f"{where}: only one cast, around the whole buffer argument")


def _check_datatypes(name: str, roles: Sequence[str], parts: Sequence[Sequence[Token]],
                     variables: Mapping[str, str]) -> None:  # fmt: skip
    """Each buffer's datatype (the next `type` parameter after it) must describe the
    element type of every variable the buffer points into (see _DATATYPES)."""
    for k, role in enumerate(roles):
        if role != "buf":
            continue
        j = next((j for j in range(k + 1, len(roles)) if roles[j] == "type"), None)
        if j is None or len(parts[j]) != 1 or not _CONSTANT.fullmatch(parts[j][0].text):
            continue  # a datatype variable: the program's own choice
        datatype = parts[j][0].text
        for var in _buffer_objects(parts[k], variables):
            fits = _DATATYPES.get(_element_type(variables[var]))
            if fits is not None and datatype not in fits:
                raise Forbidden("datatype", f"argument {j + 1} of {name}: {datatype} does not "
                                f"describe `{var}` ({variables[var]}), the buffer of argument "
                                f"{k + 1}; use {fits[0]}")  # fmt: skip


def _check_role(
    k: int, name: str, role: str, expr: Expr, names: ProgramNames | None,
    toks: Sequence[Token] = (), setup: frozenset[str] = frozenset(),
    policy: ExprPolicy | None = None, sizes: frozenset[str] = frozenset(),
) -> None:  # fmt: skip
    where = f"argument {k + 1} of {name} ({role})"
    if role in ("int", "ints") and sizes and (why := _size_fault(expr, sizes)):
        raise Forbidden("size_dependent", f"{where}: {why} can be right at the rank counts "
                        "tried and wrong at others; use the program's variables "
                        "(computed from `size` by the program itself)")  # fmt: skip
    if role in _SINGLE_NAME_ROLES and toks and (len(toks) != 1 or toks[0].kind != "ident"):
        # `(MPI_BYTE)`, `MPI_BYTE + 0`, `1 ? MPI_LONG : MPI_INT` hid the datatype from
        # _check_datatypes (bytes placed into an int, a long written over an int); a ternary
        # communicator or operator would differ per rank
        raise Forbidden("datatype" if role == "type" else "argument",
                        f"{where} must be one name: an MPI constant or a variable")  # fmt: skip
    if role == "buf" and expr.has_cast and policy is not None:
        _check_buffer_cast(where, toks, policy)
    if role in _NO_CAST_ROLES and expr.has_cast:
        raise Forbidden("cast", f"{where} takes no cast")
    constants = {n for n in expr.names if n == "NULL" or _CONSTANT.fullmatch(n)}
    allowed = _ROLE_CONSTANTS.get(role)
    if allowed is not None and constants - allowed:
        raise Forbidden("argument", f"{where} cannot be {sorted(constants - allowed)[0]}")
    if names is None:
        return
    for var in sorted(expr.variables):
        typ = names.variables.get(var, "")
        if role in _ROLE_TYPES and typ != _ROLE_TYPES[role]:
            raise Forbidden("argument", f"{where} must be an {_ROLE_TYPES[role]} variable, "
                            f"not `{var}`")  # fmt: skip
        if role == "buf" and typ in HANDLE_TYPES:
            raise Forbidden("buffer", f"{where}: `{var}` is an {typ}, not data; statuses "
                            "and handles cannot be message buffers")  # fmt: skip
    if role == "buf":
        for var in _buffer_objects(toks, names.variables):
            if var in setup:
                raise Forbidden("buffer", f"{where}: `{var}` is set up by the program "
                                "(MPI_Init, MPI_Comm_rank, MPI_Comm_size) and cannot be a "
                                "message buffer")  # fmt: skip


@screen_guard
def screen_call(
    text: str,
    names: ProgramNames | None = None,
    setup: frozenset[str] = frozenset(),
    sizes: frozenset[str] = frozenset(),
) -> ScreenedCall:
    """Screen one answer call (`MPI_X(args)` with or without `;`). `names`: the program's
    names (None: any identifier, no type checks: for parsing a reference); `setup`: its
    set-up variables (setup_variables), never buffers; `sizes`: the variables holding the
    communicator's size (size_variables), which counts, ranks and tags may only use
    arithmetically (_size_fault). Raises Forbidden or
    ScreenSyntaxError."""
    toks = tokenize(strip_comments(text))
    if toks and toks[-1].text == ";":
        toks = toks[:-1]
    reject_side_effects(toks)
    if len(toks) < 3 or toks[0].kind != "ident" or toks[1].text != "(" or toks[-1].text != ")":
        raise ScreenSyntaxError("expected one call `MPI_Name(arguments)`")
    name = toks[0].text
    inner = toks[2:-1]
    depth = 0
    for t in inner:
        depth += {"(": 1, ")": -1}.get(t.text, 0)
        if depth < 0:
            raise ScreenSyntaxError("text after the call's closing parenthesis")
    if depth:
        raise ScreenSyntaxError("unbalanced parentheses")
    if name not in FUNCTIONS:
        why = _REFUSED_WHY.get(name) or (
            "file I/O" if name.startswith("MPI_File") else
            "not one of the suite's communication calls")  # fmt: skip
        raise Forbidden("mpi_function", f"`{name}` is not accepted: {why}")
    roles = FUNCTIONS[name]
    parts = split_top(inner, ",") if inner else []
    policy = ExprPolicy(names=_Names(names), pointers=True, casts=True,
                        type_names=HANDLE_TYPES | _CAST_TYPES, what=f"an argument of {name}")  # fmt: skip
    args = []
    for k, part in enumerate(parts):
        expr = parse_expression(part, policy)
        if len(parts) == len(roles):  # a wrong arity never compiles: gcc reports it
            _check_role(k, name, roles[k], expr, names, part, setup, policy, sizes)
        args.append(expr.text)
    if names is not None and len(parts) == len(roles):
        _check_datatypes(name, roles, parts, names.variables)
    return ScreenedCall(name, tuple(args))


_PARENT_WHAT = {
    "if_statement": "the body of an `if` without braces",
    "else_clause": "the body of an `else` without braces",
    "for_statement": "the body of a `for` loop without braces",
    "while_statement": "the body of a `while` loop without braces",
    "do_statement": "the body of a `do` loop without braces",
    "case_statement": "part of a `case`",
    "labeled_statement": "a labelled statement",
    "translation_unit": "outside any function",
}


@screen_guard
def check_placement(program: str, lines: Sequence[int], texts: Sequence[str]) -> None:
    """Each inserted call (`texts[k]`, put on line `lines[k]` of `program`) must be a
    statement of a block: after `if (rank == 0)` or a `for (...)` header without braces it
    would become that statement's body and move the program's own statement out of it."""
    statements: dict[int, list[str]] = {}
    parents: dict[tuple[int, str], str] = {}
    stack = [ts_parse(program).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "expression_statement":
            line = node.start_point[0] + 1
            text = (node.text or b"").decode().strip()
            statements.setdefault(line, []).append(text)
            parents[(line, text)] = node.parent.type if node.parent is not None else ""
    for line, text in zip(lines, texts, strict=True):
        if text.strip() not in statements.get(line, []):
            raise Forbidden("placement", f"`{text}` does not stand as a statement on program "
                            f"line {line} (inside a comment, a declaration or an expression?)")  # fmt: skip
        parent = parents[(line, text.strip())]
        if parent != "compound_statement":
            what = _PARENT_WHAT.get(parent, f"inside a {parent}")
            raise Forbidden("placement", f"`{text}` would be {what}, which changes what the "
                            "program's own statements do")  # fmt: skip
