"""The screen for C text that a candidate contributes to one of our programs: OpenMP clause
arguments (omp-pragma) and MPI call arguments (mpi-completion).

    names = program_names(src)                  # the program's own variables and constants
    toks = tokenize(strip_comments(text))       # raises Forbidden / ScreenSyntaxError
    expr = parse_expression(toks, ExprPolicy(names=names.omp_names()))  # canonical text

Principle: accept only what is meant to be accepted, and hand the compiler only what was
accepted. The text is cut into tokens by our own lexer (maximal munch, as C does, so `<%`
is a digraph and `&&x` a label address) and parsed by our own recursive-descent parser of a
small, side-effect-free subset of C expressions. The canonical form given back is the
accepted tokens joined by single spaces, so nothing the lexer did not see (a comment, a
line splice, a trigraph, a glued-together token) ever reaches the compiler.

Accepted expressions: identifiers that the policy names (the program's variables and its
object-like macros whose values are themselves constant expressions), decimal/octal/hex
integer and decimal floating literals, parentheses, unary `+ - ! ~`, the binary arithmetic,
shift, bitwise, relational, equality and logical operators, `?:`, and subscripts. A policy
may add `&`, unary `*`, `.`/`->` and casts/`sizeof` to a short list of type names (MPI call
arguments need them). Everything else is refused with a `Forbidden(what, why)`: calls,
assignments, `++`/`--`, the comma operator, statement expressions and braces, string and
character literals, `sizeof`/casts where not allowed, GNU extensions (`__builtin_*`,
`typeof`, `asm`, `&&label`, `0b` literals, `$` in names), `_Pragma`, `#`/`##`, digraphs,
trigraphs, stray backslashes and any non-ASCII character (lookalike letters and digits).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from codegen_eval.types import FailureClass

from ._csource import parse as _ts_parse

__all__ = [
    "Expr",
    "ExprPolicy",
    "Forbidden",
    "ProgramNames",
    "ScreenSyntaxError",
    "Token",
    "parse_expression",
    "program_names",
    "reject_side_effects",
    "render",
    "split_top",
    "strip_comments",
    "tokenize",
]


class Forbidden(ValueError):
    """A construct the suite does not accept; `failure_class` is forbidden_construct:<what>."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(why)
        self.what = what
        self.why = why

    @property
    def failure_class(self) -> str:
        return FailureClass.with_detail(FailureClass.FORBIDDEN_CONSTRUCT, self.what)


class ScreenSyntaxError(ValueError):
    """Text that is not in the accepted grammar but tries nothing forbidden (a typo, an
    unbalanced parenthesis): reported as compile_error:syntax."""

    failure_class = FailureClass.with_detail(FailureClass.COMPILE_ERROR, "syntax")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "ident" | "number" | "punct"
    text: str


# Longest first: the lexer takes the longest punctuator that matches, as C does.
_PUNCTUATORS = (
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<:", ":>", "<%", "%>", "%:", "##",
    "(", ")", "[", "]", "{", "}", ",", ":", ";", "?", "+", "-", "*", "/", "%", "<", ">",
    "&", "|", "^", "!", "~", "=", ".", "#",
)  # fmt: skip
_ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_DIGRAPHS = frozenset({"<:", ":>", "<%", "%>", "%:"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PP_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*")
_INT_SUFFIX = r"(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?"
_INTEGER = re.compile(rf"(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*){_INT_SUFFIX}")
_FLOAT = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?[fFlL]?")
_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")

# Identifiers that are C keywords or GNU spellings: named so the refusal says what it saw.
_KEYWORD_WHAT = {
    "sizeof": "sizeof", "_Alignof": "alignof", "alignof": "alignof", "__alignof__": "alignof",
    "__alignof": "alignof", "_Generic": "generic_selection", "typeof": "typeof",
    "__typeof__": "typeof", "__typeof": "typeof", "asm": "asm", "__asm__": "asm",
    "__asm": "asm", "__extension__": "gnu_extension", "__label__": "gnu_extension",
    "__real__": "gnu_extension", "__imag__": "gnu_extension", "_Pragma": "pragma_operator",
    "__builtin_offsetof": "builtin", "offsetof": "call",
}  # fmt: skip
_TYPE_KEYWORDS = frozenset(
    {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
     "_Bool", "const", "volatile"}
)  # fmt: skip
_OTHER_KEYWORDS = frozenset(
    {"auto", "break", "case", "continue", "default", "do", "else", "enum", "extern", "for",
     "goto", "if", "inline", "register", "restrict", "return", "static", "struct", "switch",
     "typedef", "union", "while", "_Atomic", "_Complex", "_Noreturn", "_Static_assert",
     "_Thread_local", "__thread", "__attribute__", "__restrict", "__inline"}
)  # fmt: skip


def _literal_end(text: str, i: int) -> int:
    """Index just past the string or character literal that starts at text[i] (a quote);
    len(text) when it is not terminated."""
    quote, j = text[i], i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


def strip_comments(text: str) -> str:
    """`text` with every comment replaced by one space (C translation phase 3). Line splices
    must already be joined. String and character literals are kept as they are (a `//` in
    one is not a comment); `tokenize` refuses them. An unterminated `/*` is a syntax error."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        two = text[i : i + 2]
        if two == "/*":
            end = text.find("*/", i + 2)
            if end < 0:
                raise ScreenSyntaxError("unterminated /* comment")
            out.append(" ")
            i = end + 2
        elif two == "//":
            nl = text.find("\n", i)
            out.append(" ")
            i = n if nl < 0 else nl
        elif text[i] in "\"'":
            j = _literal_end(text, i)
            out.append(text[i:j])
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _check_characters(text: str) -> None:
    for ch in text:
        code = ord(ch)
        if code > 0x7E:
            raise Forbidden(
                "non_ascii", f"character {ch!r} (U+{code:04X}) is not ASCII; only ASCII "
                "C tokens are accepted (lookalike letters and digits are refused)",
            )  # fmt: skip
        if code < 0x20 and ch not in " \t\n\r":
            raise Forbidden("character", f"control character U+{code:04X} is not accepted")
    if m := _TRIGRAPH.search(text):
        raise Forbidden("trigraph", f"trigraph {m.group(0)!r} is not accepted")
    if "\\" in text:
        raise Forbidden("backslash", "a backslash (line splice or escape) is not accepted")
    for ch, what in (("$", "gnu_extension"), ("@", "character"), ("`", "character")):
        if ch in text:
            raise Forbidden(what, f"character {ch!r} is not accepted")


def tokenize(text: str) -> list[Token]:
    """C tokens of `text` (comments already stripped). String and character literals become
    tokens of kind "string"/"char" (no expression accepts them; they are refused where they
    stand, after the statement-level checks). Raises Forbidden for characters and tokens
    no screen accepts, ScreenSyntaxError for malformed numbers."""
    tokens: list[Token] = []
    rest: list[str] = []  # the text outside literals, checked for characters below
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            j = _literal_end(text, i)
            tokens.append(Token("string" if ch == '"' else "char", text[i:j]))
            rest.append(" ")
            i = j
            continue
        start = i
        if ch.isspace():
            i += 1
        elif m := _IDENT.match(text, i):
            tokens.append(Token("ident", m.group(0)))
            i = m.end()
        elif m := _PP_NUMBER.match(text, i):
            tokens.append(Token("number", m.group(0)))
            i = m.end()
        else:
            for p in _PUNCTUATORS:
                if text.startswith(p, i):
                    tokens.append(Token("punct", p))
                    i += len(p)
                    break
            else:
                i += 1  # a character no token starts with: _check_characters names it
        rest.append(text[start:i])
    _check_characters("".join(rest))
    for t in tokens:
        if t.text in _DIGRAPHS:
            raise Forbidden("digraph", f"digraph {t.text!r} is not accepted")
        if t.text in ("#", "##"):
            raise Forbidden("preprocessor_operator", f"{t.text!r} is not accepted")
        if t.text == "...":
            raise ScreenSyntaxError("unexpected '...'")
        if t.kind == "number":
            _check_number(t.text)
    return tokens


def _check_number(text: str) -> str:
    if _INTEGER.fullmatch(text) or _FLOAT.fullmatch(text):
        return text
    if re.fullmatch(r"0[bB][01]+\w*", text):
        raise Forbidden("gnu_extension", f"binary literal {text!r} is a GNU extension")
    raise ScreenSyntaxError(f"malformed number {text!r}")


def render(tokens: list[Token]) -> str:
    """The canonical text of accepted tokens: single spaces between them, so that no two
    tokens can fuse into another one (`/` `*`, `&` `&`) in the compiler's lexer."""
    return " ".join(t.text for t in tokens)


def reject_side_effects(tokens: list[Token]) -> None:
    """Refuse the tokens that can only mean a statement or a side effect, wherever they
    stand: braces (statement expressions), `;`, assignments, `++`/`--`."""
    for k, t in enumerate(tokens):
        if t.text == "{" and k and tokens[k - 1].text == "(":
            raise Forbidden("statement_expression", "a GNU statement expression `({ ... })` "
                            "runs statements; only expressions are accepted")  # fmt: skip
    for t in tokens:
        if t.text in ("{", "}"):
            raise Forbidden("brace", "braces are not accepted (no blocks or initialisers)")
        if t.text == ";":
            raise Forbidden("statement", "`;` is not accepted: one expression, no statements")
        if t.text in _ASSIGNMENTS:
            raise Forbidden("assignment", f"`{t.text}` assigns; only reads are accepted")
        if t.text in ("++", "--"):
            raise Forbidden("increment", f"`{t.text}` modifies a variable; only reads are "
                            "accepted")  # fmt: skip
    for t in tokens:
        if t.kind == "ident" and _KEYWORD_WHAT.get(t.text) in ("pragma_operator", "asm"):
            raise Forbidden(_KEYWORD_WHAT[t.text], f"`{t.text}` is not accepted")
    for t in tokens:
        if t.kind in ("string", "char"):
            what = "string_literal" if t.kind == "string" else "char_literal"
            raise Forbidden(what, f"{what.replace('_', ' ')}s are not accepted")


# -- program names ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProgramNames:
    """What a program declares: variables (name -> declared type text), object-like macros
    whose values are constant expressions (name -> value), functions."""

    variables: Mapping[str, str] = field(default_factory=dict)
    macros: Mapping[str, str] = field(default_factory=dict)
    functions: frozenset[str] = frozenset()

    def expression_names(self) -> dict[str, str]:
        """name -> "variable" | "macro", for ExprPolicy.names."""
        out = {m: "macro" for m in self.macros}
        out.update({v: "variable" for v in self.variables})
        return out


def _declared_name(node) -> tuple[str | None, bool]:
    """(identifier, is_function) of a declarator."""
    is_function = False
    while node is not None and node.type != "identifier":
        if node.type == "function_declarator":
            is_function = True
        node = node.child_by_field_name("declarator")
    return ((node.text or b"").decode() if node is not None else None), is_function


def program_names(src: str, *, reserved_prefix: str = "__cge") -> ProgramNames:
    """The names `src` declares (tree-sitter). Names starting with `reserved_prefix` (the
    harness's own instrumentation) are never included."""
    root = _ts_parse(src).root_node
    variables: dict[str, str] = {}
    functions: set[str] = set()
    macro_values: list[tuple[str, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type == "preproc_def":
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None:
                macro_values.append(
                    ((name.text or b"").decode(), (value.text or b"").decode() if value else "")
                )
        elif node.type == "function_definition":
            name, _ = _declared_name(node.child_by_field_name("declarator"))
            if name:
                functions.add(name)
        elif node.type in ("declaration", "parameter_declaration"):
            type_node = node.child_by_field_name("type")
            type_text = (type_node.text or b"").decode() if type_node is not None else ""
            for decl in node.children_by_field_name("declarator"):
                name, is_function = _declared_name(decl)
                if not name:
                    continue
                if is_function:
                    functions.add(name)
                else:
                    variables[name] = type_text
    # A macro is a constant when its value is a constant expression over earlier constants.
    macros: dict[str, str] = {}
    for name, value in macro_values:
        try:
            toks = tokenize(strip_comments(value))
            reject_side_effects(toks)
            parse_expression(toks, ExprPolicy(names=dict.fromkeys(macros, "macro"),
                                              constant_only=True))  # fmt: skip
        except (Forbidden, ScreenSyntaxError):
            continue
        macros[name] = value
    keep = {k: v for k, v in variables.items() if not k.startswith(reserved_prefix)}
    return ProgramNames(
        variables=keep,
        macros={k: v for k, v in macros.items() if not k.startswith(reserved_prefix)},
        functions=frozenset(functions),
    )


# -- expressions -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExprPolicy:
    """What an expression may contain. names: identifier -> "variable" | "macro" |
    "constant" (a library constant such as MPI_INT). constant_only: variables refused.
    pointers: `&`, unary `*`, `.` and `->`. casts: `(type)` casts and `sizeof` with the
    arithmetic type keywords, `void`, and `type_names`, with optional `*`s."""

    names: Mapping[str, str]
    constant_only: bool = False
    pointers: bool = False
    casts: bool = False
    type_names: frozenset[str] = frozenset()
    what: str = "an expression"  # for messages: "a schedule chunk", "an MPI argument"


_BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
    ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Operation:
    op: str  # "+", "/", "<", "?" (a conditional's condition), "u!" (unary `!`), ...
    left: frozenset[str]  # identifiers named in the left operand (or the only one)
    right: tuple[Token, ...] = ()  # the right operand's tokens (binary operators)


@dataclass(slots=True)
class Expr:
    """A parsed expression: its tokens, the program variables it reads, every identifier it
    names (variables, macros, constants), and whether it has a cast."""

    tokens: list[Token]
    variables: set[str]
    names: set[str] = field(default_factory=set)
    has_cast: bool = False
    # every operator applied: (operator, names in its left operand (the condition for `?`,
    # the operand for a unary one), its right operand's tokens); for screens that judge
    # what an expression does with one variable (mpi-completion: `size / 5`, `size > 4`)
    operations: list[Operation] = field(default_factory=list)

    @property
    def text(self) -> str:
        return render(self.tokens)


# Recursion depth of the parser (a level per `expression` and `unary` entered: a parenthesis
# costs two). Unbounded, ~200 nested parentheses raised RecursionError: scored infra_error,
# the harness's failure, instead of the candidate's. Honest arguments nest a few levels.
MAX_NESTING = 64


class _Parser:
    def __init__(self, tokens: list[Token], policy: ExprPolicy) -> None:
        self.toks = tokens
        self.k = 0
        self.depth = 0
        self.policy = policy
        self.variables: set[str] = set()
        self.names: set[str] = set()
        self.has_cast = False
        self.seen: list[str] = []  # identifiers in the order read
        self.operations: list[Operation] = []

    def peek(self, offset: int = 0) -> Token | None:
        j = self.k + offset
        return self.toks[j] if j < len(self.toks) else None

    def take(self, text: str | None = None) -> Token:
        t = self.peek()
        if t is None:
            raise ScreenSyntaxError(f"{self.policy.what} ends too early")
        if text is not None and t.text != text:
            raise ScreenSyntaxError(f"expected {text!r}, found {t.text!r} in {self.policy.what}")
        self.k += 1
        return t

    def nest(self) -> None:
        """One level deeper; refused past MAX_NESTING (the caller returns through `unnest`)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise Forbidden("too_deep", f"{self.policy.what} nests too deeply (parentheses, "
                            "subscripts, `?:`, unary operators, casts)")  # fmt: skip

    def expression(self) -> None:
        self.nest()
        start = len(self.seen)
        self.binary(1)
        if (t := self.peek()) is not None and t.text == "?":
            self.operations.append(Operation("?", frozenset(self.seen[start:])))
            self.take("?")
            self.expression()
            if (c := self.peek()) is not None and c.text == ",":
                raise Forbidden("comma_operator", "the comma operator is not accepted")
            self.take(":")
            self.expression()
        self.depth -= 1

    def binary(self, min_prec: int) -> None:
        start = len(self.seen)
        self.unary()
        while (t := self.peek()) is not None and _BINARY_PRECEDENCE.get(t.text, 0) >= min_prec:
            left = frozenset(self.seen[start:])
            self.take()
            at = self.k
            self.binary(_BINARY_PRECEDENCE[t.text] + 1)
            self.operations.append(Operation(t.text, left, tuple(self.toks[at : self.k])))

    def unary(self) -> None:
        self.nest()
        self._unary()
        self.depth -= 1

    def _unary(self) -> None:
        t = self.peek()
        if t is None:
            raise ScreenSyntaxError(f"{self.policy.what} ends too early")
        if t.text in ("+", "-", "!", "~"):
            start = len(self.seen)
            self.take()
            self.unary()
            self.operations.append(Operation("u" + t.text, frozenset(self.seen[start:])))
            return
        if t.text == "&&":
            raise Forbidden("gnu_extension", "`&&label` (a label's address) is a GNU extension")
        if t.text in ("&", "*"):
            if not self.policy.pointers:
                what = "address_of" if t.text == "&" else "dereference"
                raise Forbidden(what, f"unary `{t.text}` is not accepted in {self.policy.what}")
            self.take()
            self.unary()
            return
        if t.kind == "ident" and t.text == "sizeof":
            if not self.policy.casts:
                raise Forbidden("sizeof", f"`sizeof` is not accepted in {self.policy.what}")
            self.take()
            if (p := self.peek()) is not None and p.text == "(" and self.is_type_start(1):
                self.take("(")
                self.type_name()
                self.take(")")
            else:
                self.unary()
            return
        if t.text == "(" and self.is_type_start(1):
            if not self.policy.casts:
                raise Forbidden("cast", f"casts are not accepted in {self.policy.what}")
            self.has_cast = True
            self.take("(")
            self.type_name()
            self.take(")")
            self.unary()
            return
        self.postfix()

    def is_type_start(self, offset: int) -> bool:
        t = self.peek(offset)
        if t is None or t.kind != "ident":
            return False
        if t.text in _TYPE_KEYWORDS:
            return True
        return t.text in self.policy.type_names and t.text not in self.policy.names

    def type_name(self) -> None:
        seen = 0
        while (
            (t := self.peek()) is not None
            and t.kind == "ident"
            and (t.text in _TYPE_KEYWORDS or t.text in self.policy.type_names)
        ):
            self.take()
            seen += 1
        if not seen:
            t = self.peek()
            raise Forbidden("cast", f"type {t.text if t else '?'!r} is not accepted in a cast "
                            "or sizeof")  # fmt: skip
        while (t := self.peek()) is not None and t.text in ("*", "const", "volatile"):
            self.take()
        if (t := self.peek()) is not None and t.text != ")":
            raise Forbidden("cast", f"only simple type names are accepted in casts and "
                            f"sizeof, not {t.text!r}")  # fmt: skip

    def postfix(self) -> None:
        self.primary()
        while (t := self.peek()) is not None:
            if t.text == "[":
                self.take("[")
                self.expression()
                self.expect_close("]")
            elif t.text == "(":
                raise Forbidden("call", f"a call is not accepted in {self.policy.what}: it "
                                "could run any code")  # fmt: skip
            elif t.text in (".", "->"):
                if not self.policy.pointers:
                    raise Forbidden("member_access", f"`{t.text}` is not accepted in "
                                    f"{self.policy.what}")  # fmt: skip
                self.take()
                m = self.take()
                if m.kind != "ident":
                    raise ScreenSyntaxError(f"expected a member name after {t.text!r}")
            else:
                return

    def expect_close(self, close: str) -> None:
        t = self.peek()
        if t is not None and t.text == ",":
            raise Forbidden("comma_operator", "the comma operator is not accepted")
        self.take(close)

    def primary(self) -> None:
        t = self.take()
        if t.kind == "number":
            return
        if t.kind in ("string", "char"):
            what = "string_literal" if t.kind == "string" else "char_literal"
            raise Forbidden(what, f"{what.replace('_', ' ')}s are not accepted in "
                            f"{self.policy.what}")  # fmt: skip
        if t.text == "(":
            self.expression()
            self.expect_close(")")
            return
        if t.kind != "ident":
            raise ScreenSyntaxError(f"unexpected {t.text!r} in {self.policy.what}")
        if t.text in _KEYWORD_WHAT:
            what = _KEYWORD_WHAT[t.text]
            raise Forbidden(what, f"`{t.text}` is not accepted in {self.policy.what}")
        if t.text.startswith("__builtin"):
            raise Forbidden("builtin", f"`{t.text}` is a compiler builtin, not accepted")
        nxt = self.peek()
        if nxt is not None and nxt.text == "(":
            raise Forbidden("call", f"`{t.text}(...)` is a call; {self.policy.what} may only "
                            "read the program's variables and constants")  # fmt: skip
        if t.text in _TYPE_KEYWORDS or t.text in _OTHER_KEYWORDS:
            raise ScreenSyntaxError(f"keyword {t.text!r} in {self.policy.what}")
        kind = self.policy.names.get(t.text)
        self.names.add(t.text)
        self.seen.append(t.text)
        if kind is None:
            raise Forbidden("identifier", f"`{t.text}` is not a variable or constant of this "
                            "program")  # fmt: skip
        if kind == "variable":
            if self.policy.constant_only:
                raise Forbidden("non_constant", f"`{t.text}` is a variable; {self.policy.what} "
                                "must be a constant (literals and the program's macros)")  # fmt: skip
            self.variables.add(t.text)


def parse_expression(tokens: list[Token], policy: ExprPolicy) -> Expr:
    """`tokens` as exactly one accepted expression. Raises Forbidden or ScreenSyntaxError."""
    if not tokens:
        raise ScreenSyntaxError(f"{policy.what} is empty")
    reject_side_effects(tokens)
    p = _Parser(tokens, policy)
    p.expression()
    if (t := p.peek()) is not None:
        if t.text == ",":
            raise Forbidden("comma_operator", f"the comma operator is not accepted in "
                            f"{policy.what}")  # fmt: skip
        raise ScreenSyntaxError(f"unexpected {t.text!r} in {policy.what}")
    return Expr(list(tokens), p.variables, p.names, p.has_cast, p.operations)


def split_top(tokens: list[Token], sep: str) -> list[list[Token]]:
    """Split on `sep` outside (), [] (and {} which screens refuse anyway)."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts
