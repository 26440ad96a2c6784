"""The import direction is part of the architecture: sandboxes and appl are leaves,
codegen_eval may import them, agents may import all. Checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "sandboxes": set(),
    "appl": set(),
    "codegen_eval": {"appl", "sandboxes"},
    "agents": {"appl", "sandboxes", "codegen_eval"},
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_imports_point_only_downward() -> None:
    violations = []
    for package, allowed in ALLOWED.items():
        for path in (ROOT / package).rglob("*.py"):
            others = (_imported_packages(path) & set(ALLOWED)) - {package} - allowed
            if others:
                violations.append(f"{path.relative_to(ROOT)} imports {sorted(others)}")
    assert not violations, "\n".join(violations)


def test_every_package_declares_its_public_names() -> None:
    for package in ALLOWED:
        init = ROOT / package / "__init__.py"
        tree = ast.parse(init.read_text())
        names = {
            t.id
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name)
        }
        assert "__all__" in names, f"{package}/__init__.py has no __all__"
