"""Icarus Verilog's compiled output (vvp assembly), read the way `vvp` reads it.

`iverilog -o sim.vvp` writes a text file that `vvp` loads before simulating anything: scopes
(`S_.. .scope module, "inst" "Type" ..., PARENT;`), signals and functors labelled at column 0
(`v0x.._0 .net "a", 0 0, v0x.._0;`), and thread code (`%load/vec4 ...`, `%vpi_call ...
"$display"`) after a `.scope S_..;` line that says which scope the code belongs to. This
module follows vvp's own lexical rules (a string is `"([^"\\\\]|\\\\.)*"`, `;` ends a
statement and the rest of its line is a comment, `#` starts a comment, a label is text at
column 0), so the screen sees what the simulator will run: after the preprocessor, macros,
escaped identifiers and constant folding have all been applied by the compiler itself.

Iverilog escapes every character of a user's name that vvp's lexer would treat specially
(`"` in strings, `;`/`#`/`"` in labels), so no name can end a statement early.

Statements keep their text; tokens are made on demand (most of a design is harness code the
screen only fingerprints), which keeps a parse at about a millisecond per thousand lines.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field

from codegen_eval.errors import CodegenEvalError

_LABEL_AT_COL0 = re.compile(r"[.$_a-zA-Z\\][.$_a-zA-Z\\0-9<>/]*")
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'  # string
    r"|&(?:APV|PQ|PV|A)"  # variable access functions (&PV<label, off, width>)
    r"|[Cc]4<[01xz]*>|[Cc]8<[0-7xz]*>|[Cc]r<m[a-f0-9]*g[a-f0-9]*>"  # constants
    r"|S<[0-9]*,(?:str|vec4,[us][0-9]+)>|T<[0-9]*,[0-9]*,[us]>|W<[0-9]*,r>"
    r"|%[.$_/a-zA-Z0-9]+"  # instruction
    r"|:[a-z_]+"  # header keyword (:vpi_module, :file_names, ...)
    r"|[.$_a-zA-Z\\][.$_a-zA-Z\\0-9<>/]*"  # symbol (a label reference or a keyword)
    r"|0x[0-9a-fA-F]+|[0-9]+"  # number
    r"|[;#]"  # end of statement / comment
    r"|\S"  # punctuation
)
_SCOPE_DEF = re.compile(
    r'^(?P<kind>[^,\s]+)\s*,\s*"(?P<name>(?:[^"\\]|\\.)*)"\s*"(?P<type>(?:[^"\\]|\\.)*)"'
    r"[^,]*(?:,[^,]*)?(?:,\s*(?P<parent>\S+))?\s*$"
)
_PORT_INFO = re.compile(
    r'^(?P<idx>\d+)\s+/\s*(?P<dir>\w+)\s+(?P<width>\d+)\s+"(?P<name>(?:[^"\\]|\\.)*)"'
)
SYSCALL_OPS = ("%vpi_call", "%vpi_func")  # with suffixes such as /w, /r, /s, /i
SYSFUNC_DIRECTIVES = (".sfunc",)  # .sfunc and .sfunc/e: a system function in a net
_BUFFERS = frozenset({"BUF", "BUFZ", "BUFT"})


class VvpSyntaxError(CodegenEvalError, ValueError):
    """The file does not read as vvp assembly (an unterminated statement or string)."""


@dataclass(slots=True)
class Scope:
    label: str
    kind: str  # module, package, task, function..., begin, fork, generate, class
    name: str
    type: str  # the module (definition) name for kind "module"
    parent: str | None  # the parent scope's label
    path: str = ""  # hierarchical name, e.g. tb.top_module1.sub
    ports: list[tuple[str, int, str]] = field(default_factory=list)  # (DIR, width, name)


@dataclass(slots=True)
class Stmt:
    """One statement: `label head args;`. head is a directive (.net, .functor, ...), an
    instruction (%load/vec4, ...) or "" for a bare code label (`T_0 ;`)."""

    scope: str | None  # label of the scope it belongs to (None: before any scope)
    label: str | None
    head: str
    args: str  # the text after head, up to the `;`
    segment: int  # a new segment starts at every scope change (one thread, one task body)
    _tokens: list[str] | None = None

    @property
    def tokens(self) -> list[str]:
        if self._tokens is None:
            self._tokens = _TOKEN.findall(self.args)
        return self._tokens

    def strings(self) -> list[str]:
        return [unquote(t) for t in self.tokens if t.startswith('"')]

    def syscall(self) -> str | None:
        """The system task/function this statement calls, if any."""
        if self.head.startswith(SYSCALL_OPS) or self.head.startswith(SYSFUNC_DIRECTIVES):
            names = self.strings()
            return names[0] if names else None
        return None


def unquote(token: str) -> str:
    return token[1:-1] if len(token) >= 2 and token[0] == token[-1] == '"' else token


def is_view(st: Stmt) -> bool:
    """A net, or a buffer functor: it carries its single input's value unchanged."""
    return st.head.startswith(".net") or (
        st.head == ".functor" and bool(st.tokens) and st.tokens[0] in _BUFFERS
    )


def is_code(st: Stmt) -> bool:
    return st.head.startswith(("%", *SYSFUNC_DIRECTIVES)) or st.head in (".thread", "")


@dataclass(slots=True)
class Design:
    header: list[Stmt]  # :ivl_version, :vpi_module, :file_names, ...
    scopes: dict[str, Scope]
    stmts: list[Stmt]
    defs: dict[str, Stmt]  # label -> the statement defining it
    files: list[str]  # the :file_names table
    _source: dict[str, str] = field(default_factory=dict, repr=False)

    def roots(self) -> list[Scope]:
        return [s for s in self.scopes.values() if s.parent is None]

    def subtree(self, label: str) -> set[str]:
        kids: dict[str | None, list[str]] = defaultdict(list)
        for s in self.scopes.values():
            kids[s.parent].append(s.label)
        todo, seen = [label], {label}
        while todo:
            for c in kids.get(todo.pop(), []):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return seen

    def vpi_modules(self) -> list[str]:
        return [unquote(s.tokens[0]) for s in self.header if s.head == ":vpi_module" and s.tokens]

    def refs(self, stmt: Stmt) -> list[str]:
        """The labels (defined in this file) that a statement refers to."""
        return [t for t in stmt.tokens if t in self.defs or t in self.scopes]

    def source(self, label: str) -> str:
        """The object that holds a value: nets and buffers are followed to their input."""
        if label in self._source:
            return self._source[label]
        seen, cur = {label}, label
        while True:
            st = self.defs.get(cur)
            if st is None or not is_view(st):
                break
            refs = self.refs(st)
            if len(refs) != 1 or refs[0] in seen:
                break
            seen.add(refs[0])
            cur = refs[0]
        self._source[label] = cur
        return cur

    def net_name(self, label: str) -> str | None:
        """The declared name of a signal, parameter or named event."""
        d = self.defs.get(label)
        if d is None or not d.tokens:
            return None
        first = d.tokens[1] if d.tokens[0] == "*" and len(d.tokens) > 1 else d.tokens[0]
        return _unescape(unquote(first)) if first.startswith('"') else None


def _statement_end(line: str, pos: int) -> tuple[int, bool]:
    """(index just past the statement text, whether a `;` ended it) from `pos`: the first
    `;` or `#` outside a string (vvp's strings: `"([^"\\\\]|\\\\.)*"`)."""
    i, n = pos, len(line)
    while True:
        q = line.find('"', i)
        stop = n if q < 0 else q
        semi, hash_ = line.find(";", i, stop), line.find("#", i, stop)
        if semi >= 0 and (hash_ < 0 or semi < hash_):
            return semi, True
        if hash_ >= 0:
            return hash_, False
        if q < 0:
            return n, False
        k = q  # skip the string: a quote ends it unless an odd run of backslashes precedes
        while True:
            k = line.find('"', k + 1)
            if k < 0:
                raise VvpSyntaxError(f"unterminated string: {line[:80]!r}")
            b = k - 1
            while b > q and line[b] == "\\":
                b -= 1
            if (k - 1 - b) % 2 == 0:
                break
        i = k + 1


def parse(text: str) -> Design:
    """Parse vvp assembly. Raises VvpSyntaxError on text vvp would not read either."""
    header: list[Stmt] = []
    scopes: dict[str, Scope] = {}
    stmts: list[Stmt] = []
    defs: dict[str, Stmt] = {}
    files: list[str] = []
    current: str | None = None
    segment = 0
    label: str | None = None
    pending = ""
    in_files = False

    for line in text.split("\n"):
        if not line:
            continue
        pos = 0
        if label is None and not pending:
            c = line[0]
            if c == "#":
                continue
            if not c.isspace() and c not in ':"%':
                m = _LABEL_AT_COL0.match(line)
                if m:
                    label = m.group(0)
                    pos = m.end()
        end, ended = _statement_end(line, pos)
        pending = f"{pending} {line[pos:end]}" if pending else line[pos:end]
        if not ended:
            continue
        body, lab = pending.strip(), label
        pending, label = "", None
        parts = body.split(None, 1)
        first = parts[0] if parts else ""
        if first[:1] in (".", "%", ":"):
            head, args = first, parts[1] if len(parts) > 1 else ""
        else:
            head, args = "", body
        if head == ".scope":
            if lab is not None:  # a scope definition
                m = _SCOPE_DEF.match(args)
                if not m:
                    raise VvpSyntaxError(f"unreadable scope definition {lab}")
                scopes[lab] = Scope(
                    lab, m["kind"], _unescape(m["name"]), _unescape(m["type"]), m["parent"]
                )
                current = lab
            elif args:  # `.scope S_x;`: the code that follows belongs to scope S_x
                current = args.split()[0]
            segment += 1
            continue
        st = Stmt(current, lab, head, args, segment)
        if head.startswith(":"):
            header.append(st)
            in_files = head == ":file_names"
            continue
        if in_files and lab is None and not head:
            files.append(unquote(args))
            continue
        if head == ".port_info" and current in scopes:
            m = _PORT_INFO.match(args)
            if m:
                scopes[current].ports.append((m["dir"], int(m["width"]), _unescape(m["name"])))
            continue
        stmts.append(st)
        if lab is not None:
            defs[lab] = st
    if pending or label:
        raise VvpSyntaxError("the file ends inside a statement")
    for s in scopes.values():
        s.path = _path(scopes, s)
    return Design(header, scopes, stmts, defs, files)


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def _path(scopes: dict[str, Scope], s: Scope) -> str:
    parts, seen = [s.name], {s.label}
    p = s.parent
    while p is not None and p in scopes and p not in seen:
        seen.add(p)
        parts.append(scopes[p].name)
        p = scopes[p].parent
    return ".".join(reversed(parts))


# -- fingerprints of the harness ---------------------------------------------------------
# Labels are addresses (v0x55.._0, L_0x.., E_0x../1, S_0x..) or thread numbers (T_12.3);
# file and line numbers of system calls and parameters depend on the file table. None of it
# is something the candidate chooses, so a fingerprint drops all of it and keeps the rest:
# instructions, constants, names, strings, parameter values.
_ADDRESS = re.compile(r"\b[A-Za-z]*_?0x[0-9a-fA-F]+[\w/]*|\bT_\d+")
_FILE_LINE = re.compile(r"^(\S+ )\d+ \d+")
_PARAM_POS = re.compile(r'^("(?:[^"\\]|\\.)*") \d+ \d+ \d+')


def masked(st: Stmt, tag: str | None) -> str:
    args = st.args
    if st.head.startswith(SYSCALL_OPS + SYSFUNC_DIRECTIVES):
        args = _FILE_LINE.sub(r"\1", "_ " + args)[2:]
    elif st.head.startswith(".param"):
        args = _PARAM_POS.sub(r"\1", args)
    text = f"{st.head} {_ADDRESS.sub('@', args)}"
    return text.replace(tag, "TAG") if tag else text


_SYSCALL_FILE_LINE = re.compile(r"^((?:%vpi_\S+|\.sfunc\S*) )\d+ \d+", re.MULTILINE)


def code_segments(design: Design, labels: set[str], tag: str | None) -> dict[tuple[str, int], str]:
    """The masked code of the given scopes, one text per segment (a thread, a task or
    function body, a scope's system-function nets)."""
    raw: dict[tuple[str, int], list[str]] = defaultdict(list)
    for st in design.stmts:
        if st.scope in labels and is_code(st):
            raw[(st.scope, st.segment)].append(f"{st.head} {st.args}")  # type: ignore[index]
    out = {}
    for key, lines in raw.items():
        text = _ADDRESS.sub("@", _SYSCALL_FILE_LINE.sub(r"\1", "\n".join(lines)))
        out[key] = text.replace(tag, "TAG") if tag else text
    return out


def segment_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def scope_fingerprints(
    design: Design, labels: set[str], tag: str | None
) -> dict[str, dict[str, list[str]]]:
    """Per scope path (for the given scope labels): the sorted hashes of its code segments
    and its masked parameters."""
    key = {lab: _tagless(design.scopes[lab].path, tag) for lab in labels}
    out: dict[str, dict[str, list[str]]] = {k: {"code": [], "params": []} for k in key.values()}
    for st in design.stmts:
        if st.scope in key and st.head.startswith(".param"):
            out[key[st.scope]]["params"].append(masked(st, tag))
    for (lab, _), text in code_segments(design, labels, tag).items():
        out[key[lab]]["code"].append(segment_hash(text))
    for entry in out.values():
        entry["code"].sort()
        entry["params"].sort()
    return out


_DUT_DRIVER = "<design under test>"


def net_drivers(
    design: Design, labels: set[str], dut: set[str], tag: str | None
) -> dict[str, dict[str, str]]:
    """Per scope path (for the given scope labels): every named net, with its declaration and
    what drives it: the first statement behind its views (nets, buffers), masked, or the
    design under test where the value comes through a scope in `dut` (`driven_by_dut`).

    A design that adds a driver to a harness net (`assign (supply0, supply1) tb.tb_match =
    1`, a `pullup` or a gate output on it) turns the net's driver into a resolver (`.resolv`,
    and the net into a strength-aware `.net8`), or becomes the driver of a net that had none;
    iverilog emits both in the harness's scope, where no code changes, so the code
    fingerprints above cannot see it and this can."""
    key = {lab: _tagless(design.scopes[lab].path, tag) for lab in labels}
    out: dict[str, dict[str, str]] = {k: {} for k in key.values()}
    for st in design.stmts:
        if st.scope not in key or not st.head.startswith(".net") or st.label is None:
            continue
        if not st.tokens or st.tokens[0] == "*":
            continue  # a compiler temporary: no design can name it
        name = _tagless(design.net_name(st.label) or st.label, tag)
        out[key[st.scope]][name] = f"{masked(st, tag)} <- {_driver(design, st, dut, tag)}"
    return out


def driven_by_dut(signature: str) -> bool:
    """Whether a `net_drivers` signature is of a net that carries the design's own value."""
    return signature.endswith(f" <- {_DUT_DRIVER}")


def _driver(design: Design, net: Stmt, dut: set[str], tag: str | None) -> str:
    st, seen = net, {net.label}
    while True:
        if st.scope in dut:
            return _DUT_DRIVER
        refs = design.refs(st)
        if not is_view(st) or len(refs) != 1 or refs[0] in seen or refs[0] not in design.defs:
            return masked(st, tag)
        seen.add(refs[0])
        st = design.defs[refs[0]]


def _tagless(path: str, tag: str | None) -> str:
    return path.replace(tag, "TAG") if tag else path


__all__ = [
    "Design",
    "Scope",
    "Stmt",
    "VvpSyntaxError",
    "code_segments",
    "driven_by_dut",
    "is_code",
    "is_view",
    "masked",
    "net_drivers",
    "parse",
    "scope_fingerprints",
    "segment_hash",
    "unquote",
]
