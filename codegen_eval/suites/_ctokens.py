"""The lexer of the C screen (`_cscreen.py`): C text cut into tokens by maximal munch, with
everything the screens refuse at the token level (GNU extensions, digraphs, trigraphs, stray
backslashes, non-ASCII lookalikes, literals where no literal may stand) raised as
`Forbidden(what, why)`; `ScreenSyntaxError` for text that is not C."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen_eval.errors import CodegenEvalError
from codegen_eval.types import FailureClass

__all__ = [
    "Forbidden",
    "ScreenSyntaxError",
    "Token",
    "reject_side_effects",
    "render",
    "strip_comments",
    "tokenize",
]


class Forbidden(CodegenEvalError, ValueError):
    """A construct the suite does not accept; `failure_class` is forbidden_construct:<what>."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(why)
        self.what = what
        self.why = why

    @property
    def failure_class(self) -> str:
        return FailureClass.with_detail(FailureClass.FORBIDDEN_CONSTRUCT, self.what)


class ScreenSyntaxError(CodegenEvalError, ValueError):
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
