"""The import structure the architecture page promises: no import cycle between modules,
deferred (inside a function) or not, and the package direction sandboxes, appl <- codegen_eval
<- agents. Imports under `if TYPE_CHECKING:` are type-only and do not count.

Read from the source with `ast`, so the check sees every import, whether or not a test run
happens to execute it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sandboxes", "appl", "codegen_eval", "agents")
# What each package may import of the others.
ALLOWED = {
    "sandboxes": set(),
    "appl": set(),
    "codegen_eval": {"sandboxes", "appl"},
    "agents": {"sandboxes", "appl", "codegen_eval"},
}


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def _type_only_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(x) for x in ast.walk(stmt))
    return skip


def _imported_names(module: str, is_package: bool, tree: ast.AST) -> Iterator[str]:
    skip = _type_only_nodes(tree)
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                full = base + (f".{node.module}" if node.module else "")
            else:
                full = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                yield f"{full}.{alias.name}"


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the project modules it imports (the longest module prefix of each name)."""
    modules = _modules(root, packages)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in _imported_names(module, is_package, tree):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_back_deferred_or_not() -> None:
    found = cycles(import_graph(ROOT, PACKAGES))
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_packages_import_only_downward() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph(ROOT, PACKAGES).items()
        for target in targets
        if (src := module.split(".")[0]) != (dst := target.split(".")[0])
        and dst not in ALLOWED[src]
    ]
    assert wrong == []


def test_the_check_sees_a_deferred_cycle_and_ignores_type_only_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\n"
    )
    (pkg / "d.py").write_text("import pkg.c\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert graph["pkg.c"] == set() and graph["pkg.d"] == {"pkg.c"}
