"""Outside `sandboxes/`, code uses the sandbox seam through its public surface only: names in
`sandboxes.__all__` imported from `sandboxes`, or the public subpackages and modules below
(each name in its `__all__` where it has one). Never a `_private` module or name, never an
internal module (`sandboxes.base`, the backends, cgroups, seccomp): what the kernel gym needed
from those (`read_beneath`, `sandbox_uid`) is exported and documented instead.

Read from the source with `ast` (deferred imports inside functions included), as
tests/test_architecture.py reads the import graph.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSUMERS = ("appl", "codegen_eval", "agents")
# Modules of sandboxes that are public in their own right (the QEMU seam, the toolchain
# recipes, the types of the seam, the Inspect AI sandbox environments).
PUBLIC_MODULES = {
    "sandboxes",
    "sandboxes.types",
    "sandboxes.qemu",
    "sandboxes.toolchains",
    "sandboxes.toolchains.recipes",
    "sandboxes.inspect_sandbox",
    "sandboxes.inspect_docker",
}


def sandbox_imports(tree: ast.AST) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) for each import of sandboxes (name None for `import m`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sandboxes":
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "sandboxes":
                for alias in node.names:
                    yield node.lineno, node.module, alias.name


def violation(module: str, name: str | None) -> str | None:
    """Why importing `name` from `module` reaches past the public surface, or None."""
    if any(part.startswith("_") for part in module.split(".")):
        return "a private module"
    if name is not None and name.startswith("_"):
        return "a private name"
    if name is not None and f"{module}.{name}" in PUBLIC_MODULES:
        return None  # `from sandboxes import toolchains`
    if module not in PUBLIC_MODULES:
        return "an internal module (import the name from `sandboxes`)"
    public = getattr(importlib.import_module(module), "__all__", None)
    if name is not None and public is not None and name not in public:
        return f"a name outside {module}.__all__"
    return None


def test_no_module_outside_sandboxes_reaches_past_its_public_surface() -> None:
    wrong = []
    for package in CONSUMERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for line, module, name in sandbox_imports(tree):
                if why := violation(module, name):
                    where = path.relative_to(ROOT)
                    wrong.append(f"{where}:{line}: {module} {name or ''}: {why}")
    assert wrong == [], "\n".join(wrong)


def test_the_check_sees_each_kind_of_reach() -> None:
    tree = ast.parse(
        "from sandboxes.base import read_beneath\n"
        "from sandboxes import _make\n"
        "import sandboxes._host\n"
        "from sandboxes.qemu import _private_helper\n"
        "from sandboxes.qemu import not_exported\n"
        "def f():\n    from sandboxes import open_sandbox, toolchains, read_beneath\n"
    )
    found = [(line, violation(module, name)) for line, module, name in sandbox_imports(tree)]
    assert sorted(found, key=lambda x: x[0]) == [
        (1, "an internal module (import the name from `sandboxes`)"),
        (2, "a private name"),
        (3, "a private module"),
        (4, "a private name"),
        (5, "a name outside sandboxes.qemu.__all__"),
        (7, None),
        (7, None),
        (7, None),
    ]
