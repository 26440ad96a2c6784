"""The @ppl source transformation, done once at decoration time.

Two rewrites, both keeping the original line numbers (tracebacks and call sites stay right):

1. Every expression statement of the function's own body (not of nested functions or
   classes), except the docstring and `await`/`yield` statements, becomes
   `__appl_rt__.record(<expr>, <is_call>)`: the runtime adds it to the prompt when it is
   prompt text (see `appl.core.record` for the exact rule). The docstring, as in APPL, is a
   leading string written with TRIPLE quotes; a leading "..." or '...' string is prompt.
2. Every f-string in the function becomes `__appl_rt__.fstring((<literal>, (<value>, <conv>,
   <spec>), ...))`, which is a plain `str` unless a field holds a pending future, in which
   case the future is kept (appl.prompt.PromptText).

`__appl_rt__` is not put in the module's globals: the rewritten function is compiled inside
a factory function that also declares the original free variables, and is then rebuilt with
the ORIGINAL closure cells plus one cell for the hooks object. So closures, `nonlocal` and
zero-argument `super()` keep working, and the user's module namespace is left untouched.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from appl.errors import ApplError

HOOKS_NAME = "__appl_rt__"
_INNER_NAME = "__appl_function__"
_PPL_DECORATOR_NAMES = {"ppl"}


def _hook(attr: str, node: ast.AST, args: list[ast.expr]) -> ast.Call:
    call = ast.Call(
        func=ast.Attribute(
            value=ast.Name(id=HOOKS_NAME, ctx=ast.Load()), attr=attr, ctx=ast.Load()
        ),
        args=args,
        keywords=[],
    )
    return ast.copy_location(call, node)


class _Transformer(ast.NodeTransformer):
    def __init__(self) -> None:
        self.nested = 0  # >0 inside nested defs/classes/lambdas: no statement recording

    def _visit_nested(self, node: ast.AST) -> ast.AST:
        self.nested += 1
        try:
            return self.generic_visit(node)
        finally:
            self.nested -= 1

    visit_FunctionDef = _visit_nested
    visit_AsyncFunctionDef = _visit_nested
    visit_ClassDef = _visit_nested
    visit_Lambda = _visit_nested

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        self.generic_visit(node)
        if self.nested or isinstance(node.value, (ast.Await, ast.Yield, ast.YieldFrom)):
            return node
        is_call = isinstance(node.value, ast.Call) and not _is_fstring_hook(node.value)
        node.value = _hook("record", node.value, [node.value, ast.Constant(is_call)])
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        segments: list[ast.expr] = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                # the format spec stays an ordinary f-string (it must be a str)
                spec = value.format_spec if value.format_spec is not None else ast.Constant("")
                segments.append(
                    ast.Tuple(
                        elts=[self.visit(value.value), ast.Constant(value.conversion), spec],
                        ctx=ast.Load(),
                    )
                )
            else:
                segments.append(value)
        return _hook("fstring", node, [ast.Tuple(elts=segments, ctx=ast.Load())])


def _is_fstring_hook(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "fstring"
        and isinstance(func.value, ast.Name)
        and func.value.id == HOOKS_NAME
    )


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _parse_function(
    func: Callable[..., Any],
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, str]:
    try:
        source = inspect.getsource(func)
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise ApplError(
            f"@ppl needs the source code of {func.__qualname__} (functions typed into an "
            f"interactive prompt or built with exec have none): {exc}"
        ) from exc
    # Parse indented source (methods, nested functions) under an `if 1:` so no dedent is
    # needed: dedent breaks on multi-line strings that are less indented than the code.
    offset = func.__code__.co_firstlineno - 1
    if source[:1].isspace():
        source = "if 1:\n" + source
        tree = ast.parse(source, filename=filename)
        fdef = tree.body[0].body[0]  # type: ignore[attr-defined]
        offset -= 1
    else:
        fdef = ast.parse(source, filename=filename).body[0]
    triple = bool(fdef.body) and _is_triple_quoted(fdef.body[0], source)
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != func.__name__:
        raise ApplError(f"@ppl applies to def / async def statements, not {func.__qualname__}")
    ast.increment_lineno(fdef, offset)
    names = [_decorator_name(d) for d in fdef.decorator_list]
    ppl_positions = [i for i, n in enumerate(names) if n in _PPL_DECORATOR_NAMES]
    if ppl_positions and ppl_positions[-1] != len(names) - 1:
        raise ApplError(
            f"{func.__qualname__}: put @ppl directly above the def (decorators between @ppl "
            "and the def would be lost when the function is recompiled)"
        )
    fdef.decorator_list = []
    return fdef, filename, "triple" if triple else ""


def _is_triple_quoted(stmt: ast.stmt, source: str) -> bool:
    """Whether `stmt` is a string statement written with triple quotes (a docstring by APPL's
    rule, which appl follows: a leading '...' or "..." string is prompt text)."""
    if not _is_docstring(stmt):
        return False
    segment = ast.get_source_segment(source, stmt) or ""
    return segment.lstrip("rRuU")[:3] in ('"""', "'''")


class CompiledPpl(NamedTuple):
    function: types.FunctionType
    docstring_excluded: bool  # a leading triple-quoted string was left out of the prompt


def compile_ppl(
    func: Callable[..., Any], hooks: object, docstring_as: str | None = None
) -> CompiledPpl:
    """Return `func` rewritten as described in the module docstring.

    docstring_as: None leaves a triple-quoted docstring out of the prompt; "user"/"system"
    adds it (cleaned like inspect.cleandoc) as the first prompt text, with that role.
    """
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"@ppl expects a function, got {type(func).__name__}")
    fdef, filename, leading = _parse_function(func)
    body = fdef.body
    start = 1 if leading == "triple" else 0
    transformer = _Transformer()
    rest = [transformer.visit(stmt) for stmt in body[start:]]
    if start and docstring_as is not None:
        doc = inspect.cleandoc(body[0].value.value)  # type: ignore[attr-defined]
        add = _hook("docstring", body[0], [ast.Constant(docstring_as), ast.Constant(doc)])
        rest.insert(0, ast.copy_location(ast.Expr(value=add), body[0]))
    fdef.body = body[:start] + rest
    # defaults and annotations are evaluated by the factory: keep the original objects instead
    fdef.args = _strip_argument_defaults(fdef.args)
    fdef.returns = None

    freevars = func.__code__.co_freevars
    factory_body: list[ast.stmt] = [
        ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(None))
        for name in (*freevars, HOOKS_NAME)
    ]
    # Renamed inside the factory so that the function's own name (used for recursion) stays a
    # global lookup, as in the original, instead of becoming a factory local.
    fdef.name = _INNER_NAME
    factory_body += [fdef, ast.Return(value=ast.Name(id=_INNER_NAME, ctx=ast.Load()))]
    factory = ast.FunctionDef(
        name="__appl_factory__",
        args=ast.arguments(
            posonlyargs=[],
            args=[],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        body=factory_body,
        decorator_list=[],
        returns=None,
    )
    ast.copy_location(factory, fdef)
    for stmt in factory_body:
        if stmt is not fdef:
            ast.copy_location(stmt, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    factory_code = _find_code(code, "__appl_factory__")
    new_code = _find_code(factory_code, _INNER_NAME).replace(
        co_name=func.__code__.co_name, co_qualname=func.__code__.co_qualname
    )

    cells = dict(zip(freevars, func.__closure__ or (), strict=True))
    cells[HOOKS_NAME] = types.CellType(hooks)
    closure = tuple(cells[name] for name in new_code.co_freevars)
    new_func = types.FunctionType(
        new_code, func.__globals__, func.__name__, func.__defaults__, closure
    )
    new_func.__kwdefaults__ = func.__kwdefaults__
    new_func.__qualname__ = func.__qualname__
    new_func.__module__ = func.__module__
    new_func.__doc__ = func.__doc__
    new_func.__annotations__ = func.__annotations__
    new_func.__dict__.update(func.__dict__)
    return CompiledPpl(new_func, bool(start) and docstring_as is None)


def _strip_argument_defaults(args: ast.arguments) -> ast.arguments:
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        arg.annotation = None
    if args.vararg:
        args.vararg.annotation = None
    if args.kwarg:
        args.kwarg.annotation = None
    # Placeholders keep the signature shape; the real defaults come from func.__defaults__.
    args.defaults = [ast.Constant(None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(None) for d in args.kw_defaults]
    return args


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _find_code(code: types.CodeType, name: str) -> types.CodeType:
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise ApplError(f"internal error: compiled @ppl function {name!r} not found")
