"""C source helpers shared by the omp-pragma and mpi-completion suites, built on tree-sitter-c.

    calls = call_statements(src, prefix="MPI_")     # every `MPI_X(...);` statement, with lines
    call = parse_call_statement("MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);")
    normalize_expr("(void *) &buf[0]") == normalize_expr("buf")   # -> "buf"
    loop_nest_vars(src, line=12, depth=2)           # iteration variables of the loop nest

Why tree-sitter rather than regexes: arguments contain nested parentheses and commas
(`(rank + 1) % size`, `f(a, b)`). These helpers serve the problems and the metrics; what a
candidate may insert into a program is decided by the stricter screen in `_cscreen.py` and
the suites' `screen.py` (SAFE_ARG_NODES below is a coarse first filter only).
Line numbers are 1-based throughout.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import tree_sitter_c
from tree_sitter import Language, Node, Parser, Tree

# Expression node kinds an inserted call's arguments may be made of: no assignments, comma
# expressions, statement expressions or calls (except MPI_* ones, e.g. MPI_Wtime()). So an
# inserted "call" can only pass values, never run other code (printf, exit, ...).
SAFE_ARG_NODES = frozenset(
    {
        "identifier", "number_literal", "char_literal", "string_literal", "string_content",
        "escape_sequence", "true", "false", "null", "pointer_expression",
        "subscript_expression", "field_expression", "field_identifier", "binary_expression",
        "unary_expression", "parenthesized_expression", "cast_expression", "type_descriptor",
        "primitive_type", "type_identifier", "abstract_pointer_declarator",
        "sized_type_specifier", "type_qualifier", "struct_specifier", "sizeof_expression",
        "conditional_expression", "concatenated_string", "argument_list", "call_expression",
    }
)  # fmt: skip


@functools.cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_c.language()))


def parse(src: str) -> Tree:
    return _parser().parse(src.encode())


def has_error(src: str) -> bool:
    """Whether tree-sitter found a syntax error (ERROR or MISSING nodes) in `src`."""
    return parse(src).root_node.has_error


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def _walk(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


@dataclass(frozen=True, slots=True)
class CallStatement:
    """One `name(args);` expression statement. `line`/`end_line` are 1-based and span the
    whole statement; `args` are the arguments' source texts."""

    line: int
    end_line: int
    name: str
    args: tuple[str, ...]
    text: str

    def normalized_args(self) -> tuple[str, ...]:
        return tuple(normalize_expr(a) for a in self.args)


def _call_of(stmt: Node) -> CallStatement | None:
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    call = stmt.named_children[0]
    if call.type != "call_expression":
        return None
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    if fn is None or fn.type != "identifier" or args is None:
        return None
    return CallStatement(
        line=stmt.start_point[0] + 1,
        end_line=stmt.end_point[0] + 1,
        name=_text(fn),
        args=tuple(_text(a) for a in args.named_children if a.type != "comment"),
        text=_text(stmt),
    )


def call_statements(src: str, prefix: str = "") -> list[CallStatement]:
    """Every statement of `src` that is a bare call of a function whose name starts with
    `prefix`, in source order. Calls inside other expressions (`t = MPI_Wtime();`) are not
    statements and are not listed."""
    out = []
    for node in _walk(parse(src).root_node):
        if node.type == "expression_statement":
            call = _call_of(node)
            if call is not None and call.name.startswith(prefix):
                out.append(call)
    return sorted(out, key=lambda c: (c.line, c.text))


def parse_call_statement(text: str, prefix: str = "MPI_") -> CallStatement | None:
    """`text` as exactly one safe call statement of a `prefix`* function, or None: a syntax
    error, several statements, another function, or an argument outside SAFE_ARG_NODES (a
    nested call is allowed only to another `prefix`* function)."""
    body = text.strip()
    if not body.endswith(";"):
        body += ";"
    wrapper = f"void __cge_probe(void) {{\n{body}\n}}\n"
    tree = parse(wrapper)
    if tree.root_node.has_error:
        return None
    fn_def = tree.root_node.named_children[0] if tree.root_node.named_child_count else None
    block = fn_def.child_by_field_name("body") if fn_def is not None else None
    if block is None:
        return None
    stmts = [c for c in block.named_children if c.type != "comment"]
    if len(stmts) != 1:
        return None
    call = _call_of(stmts[0])
    if call is None or not call.name.startswith(prefix):
        return None
    args_node = stmts[0].named_children[0].child_by_field_name("arguments")
    assert args_node is not None
    for node in _walk(args_node):
        if not node.is_named or node.type == "comment":
            continue
        if node.type not in SAFE_ARG_NODES:
            return None
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if (
                callee is None
                or callee.type != "identifier"
                or not _text(callee).startswith(prefix)
            ):
                return None
    # line numbers of the wrapper are meaningless to the caller
    return CallStatement(0, 0, call.name, call.args, call.text)


# _norm recurses once per tree level; a candidate's `1 + 1 + ... + 1` (which the screen
# accepts: a flat chain is not nesting) is a left-deep tree thousands of levels high and raised
# RecursionError in the scorer (infra_error). Deeper than this, the text is compared as written.
_NORM_DEPTH = 200


def _norm(node: Node, depth: int = 0) -> str:
    if depth > _NORM_DEPTH:
        return "".join(_text(node).split())
    depth += 1
    t = node.type
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _norm(inner[0], depth) if len(inner) == 1 else _text(node)
    if t == "cast_expression":
        # (void *) buf, (int) n: casts do not change which object or value an MPI argument
        # names, and models add or drop them freely
        value = node.child_by_field_name("value")
        return _norm(value, depth) if value is not None else _text(node)
    if t == "pointer_expression":
        op = _text(node.children[0])
        arg = node.child_by_field_name("argument")
        if arg is None:
            return _text(node)
        if op == "&" and arg.type == "subscript_expression":
            index = arg.child_by_field_name("index")
            array = arg.child_by_field_name("argument")
            if index is not None and array is not None:
                idx = _norm(index, depth)
                base = _norm(array, depth)
                # &a[0] is a, &a[k] is a + k: the same address, written two ways
                return base if idx == "0" else f"({base}+{idx})"
        return f"{op}{_norm(arg, depth)}"
    if t == "number_literal":
        raw = _text(node).rstrip("uUlL")
        try:
            return str(int(raw, 0))
        except ValueError:
            return raw.lower()
    if t == "binary_expression":
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        op = node.child_by_field_name("operator")
        if left is None or right is None or op is None:
            return _text(node)
        return f"({_norm(left, depth)}{_text(op)}{_norm(right, depth)})"
    if t in ("identifier", "string_literal", "char_literal"):
        return _text(node)
    if node.named_child_count == 0:
        return _text(node)
    # everything else: the tokens without whitespace, children normalized
    parts = []
    for c in node.children:
        parts.append(_norm(c, depth) if c.is_named else _text(c))
    return "".join(parts)


@functools.lru_cache(maxsize=4096)
def normalize_expr(text: str) -> str:
    """A canonical form of one C expression: whitespace, redundant parentheses and casts
    dropped, `&a[0]` -> `a`, `&a[k]` -> `(a+k)`, integer literals in decimal. Text that does
    not parse as an expression is returned with its whitespace removed."""
    tree = parse(f"void __cge_probe(void) {{ (void)({text}); }}\n")
    root = tree.root_node
    if root.has_error:
        return "".join(text.split())
    # function body -> expression_statement -> cast_expression (void)(...) -> value
    body = root.named_children[0].child_by_field_name("body")
    stmt = body.named_children[0] if body is not None and body.named_child_count else None
    cast = stmt.named_children[0] if stmt is not None and stmt.named_child_count else None
    value = cast.child_by_field_name("value") if cast is not None else None
    if value is None:
        return "".join(text.split())
    return _norm(value)


def _for_var(node: Node) -> str | None:
    init = node.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "declaration":
        decl = init.child_by_field_name("declarator")
        if decl is not None and decl.type == "init_declarator":
            decl = decl.child_by_field_name("declarator")
        return _text(decl) if decl is not None and decl.type == "identifier" else None
    if init.type == "assignment_expression":
        left = init.child_by_field_name("left")
        return _text(left) if left is not None and left.type == "identifier" else None
    return None


def loop_nest_vars(src: str, line: int, depth: int = 1) -> list[str]:
    """Iteration variables of the first `for` statement starting at or after `line` and of the
    loops perfectly nested in it, up to `depth` levels (OpenMP's collapse(n) loops). Those
    variables are predetermined private, so `private(i)` on them says nothing."""
    first: Node | None = None
    for node in _walk(parse(src).root_node):
        if node.type == "for_statement" and node.start_point[0] + 1 >= line:
            if first is None or node.start_byte < first.start_byte:
                first = node
    names: list[str] = []
    node = first
    while node is not None and len(names) < depth:
        var = _for_var(node)
        if var is None:
            break
        names.append(var)
        body = node.child_by_field_name("body")
        if body is not None and body.type == "compound_statement":
            inner = [c for c in body.named_children if c.type != "comment"]
            body = inner[0] if len(inner) == 1 else None
        node = body if body is not None and body.type == "for_statement" else None
    return names
