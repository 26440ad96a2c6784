"""Bug records: a superset of kBench's JSON (itself syzbot's bug JSON plus fix data).

kBench fields kept as they are spelled there: version, title, display-title, id, status,
fix-commits[{title, link, hash, repo, branch}], discussions, crashes[{title, syz-reproducer,
c-reproducer, kernel-config, kernel-source-git, kernel-source-commit, syzkaller-git,
syzkaller-commit, compiler-description, architecture, crash-report-link}], subsystems,
parent_of_fix_commit, patch, patch_modified_files. Optional richer fields some dumps carry
(raw_crash_report, parsed_crash_report, patch_modified_functions, c_reproducer, kernel_config)
are read when present. Everything else (unknown keys included) survives a load/save round trip.

Our own extensions live under "kgym" (tier, kind, module, source, reproducer, cmdline, ...).
A string value "@name" means "the content of file `name` next to the JSON" (bundled bugs keep
their C reproducer and patch as real files).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The crash reader's entry point for published reports, raw or symbolized.
from codegen_eval.kernelgym.crash import CrashReport, title_of_report

BUNDLED_DIR = Path(__file__).parent / "bugs"


@dataclass(slots=True)
class BugRecord:
    id: str
    title: str
    raw: dict[str, Any]  # the JSON as loaded (file references resolved)
    path: Path | None = None  # the JSON file; bundled sources are relative to its directory
    kgym: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------- kBench views
    @property
    def crash(self) -> dict[str, Any]:
        crashes = self.raw.get("crashes") or [{}]
        return crashes[0]

    @property
    def fix_commits(self) -> list[dict[str, Any]]:
        return list(self.raw.get("fix-commits") or [])

    @property
    def parent_commit(self) -> str | None:
        return self.raw.get("parent_of_fix_commit")

    @property
    def kernel_commit(self) -> str | None:
        """The commit the crash was seen on; the fix's parent is the one to repair."""
        return self.parent_commit or self.crash.get("kernel-source-commit")

    @property
    def developer_patch(self) -> str:
        return self.raw.get("patch") or ""

    @property
    def modified_files(self) -> list[str]:
        return list(self.raw.get("patch_modified_files") or [])

    @property
    def modified_functions(self) -> list[str]:
        return list(self.raw.get("patch_modified_functions") or [])

    @property
    def c_reproducer(self) -> str | None:
        """C source when the record holds it (bundled bugs, enriched dumps); kBench's own
        crashes[].c-reproducer is a syzbot link ("/text?tag=ReproC&x=...") we cannot fetch."""
        for value in (self.raw.get("c_reproducer"), self.crash.get("c-reproducer")):
            if isinstance(value, str) and "main(" in value:
                return value
        return None

    @property
    def kernel_config(self) -> str | None:
        for value in (self.raw.get("kernel_config"), self.crash.get("kernel-config")):
            if isinstance(value, str) and "CONFIG_" in value:
                return value
        return None

    @property
    def raw_crash_report(self) -> str | None:
        return self.raw.get("raw_crash_report")

    @property
    def own_report(self) -> str | None:
        """The crash report the record carries as text (`raw_crash_report`, else
        `parsed_crash_report`): the console as printed, or as syzbot publishes it
        (symbolized, a headline per inlined function). A link is no report."""
        for value in (self.raw.get("raw_crash_report"), self.raw.get("parsed_crash_report")):
            if isinstance(value, str) and "\n" in value.strip():
                return value
        return None

    @property
    def report_title(self) -> str | None:
        """The title the gym's crash reader gives the record's own report, the way it titles
        a console; None without a report, or when the reader finds it cut or mangled."""
        text = self.own_report
        crash: CrashReport | None = title_of_report(text) if text else None
        return crash.title if crash is not None and not crash.corrupted else None

    @property
    def expected_title(self) -> str:
        stored = self.kgym.get("expected_title") or self.crash.get("title") or self.title
        return stored or self.report_title or ""

    @property
    def expected_titles(self) -> list[str]:
        """Every title a run's crash may match to be this bug: the stored one, and the one the
        reader gives the record's own report. The second compares like with like: a console
        and a report read by the same reader, whatever wording the stored title has."""
        titles = [self.expected_title, self.report_title or ""]
        return [t for t in dict.fromkeys(titles) if t]

    # ------------------------------------------------------------- gym views
    @property
    def tier(self) -> int | None:
        return self.kgym.get("tier")

    @property
    def kind(self) -> str:
        """module (out-of-tree module), tree (patch to the kernel tree), kbench (a git commit)."""
        return self.kgym.get("kind", "kbench")

    @property
    def base_dir(self) -> Path | None:
        return self.path.parent if self.path else None

    @property
    def source_dir(self) -> Path | None:
        src = self.kgym.get("source")
        return self.base_dir / src if (src and self.base_dir) else None

    def with_inputs(
        self, *, kernel_config: str | None = None, c_reproducer: str | None = None
    ) -> BugRecord:
        """A copy carrying texts a kBench record only links to (`--config`, `--repro`)."""
        raw = dict(self.raw)
        if kernel_config is not None:
            raw["kernel_config"] = kernel_config
        if c_reproducer is not None:
            raw["c_reproducer"] = c_reproducer
        return BugRecord(self.id, self.title, raw, self.path, dict(self.kgym))

    def to_json(self) -> dict[str, Any]:
        out = dict(self.raw)
        if self.kgym:
            out["kgym"] = self.kgym
        return out


def _resolve(value: Any, base: Path | None) -> Any:
    if isinstance(value, str) and value.startswith("@") and base is not None:
        target = base / value[1:]
        if re.fullmatch(r"[\w.\-/]+", value[1:]) and target.is_file():
            return target.read_text()
    if isinstance(value, dict):
        return {k: _resolve(v, base) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, base) for v in value]
    return value


def record_from_json(data: dict[str, Any], path: Path | None = None) -> BugRecord:
    base = path.parent if path else None
    kgym = dict(data.get("kgym") or {})
    raw = {k: _resolve(v, base) for k, v in data.items() if k != "kgym"}
    if kgym.get("reproducer") and base is not None and "c_reproducer" not in raw:
        repro = base / kgym["reproducer"]
        if repro.is_file():
            raw["c_reproducer"] = repro.read_text()
    bug_id = str(data.get("id") or (path.stem if path else ""))
    if not bug_id:
        raise ValueError("bug record without an id")
    title = str(data.get("title") or data.get("display-title") or "")
    return BugRecord(id=bug_id, title=title, raw=raw, path=path, kgym=kgym)


def load_record(path: str | Path) -> BugRecord:
    p = Path(path)
    if p.is_dir():
        p = p / "bug.json"
    return record_from_json(json.loads(p.read_text()), p)


def load_records(path: str | Path) -> list[BugRecord]:
    """A directory of kBench JSON files (or bundled bug directories), or a JSONL file."""
    p = Path(path)
    if p.is_file() and p.suffix == ".jsonl":
        return [record_from_json(json.loads(ln)) for ln in p.read_text().splitlines() if ln.strip()]
    if p.is_file():
        return [load_record(p)]
    out = [load_record(d) for d in sorted(p.iterdir()) if (d / "bug.json").is_file()]
    out += [load_record(f) for f in sorted(p.glob("*.json"))]
    return out


def bundled_bugs(tier: int | None = None) -> list[BugRecord]:
    bugs = load_records(BUNDLED_DIR)
    return [b for b in bugs if tier is None or b.tier == tier]


def bundled_bug(bug_id: str) -> BugRecord:
    for bug in bundled_bugs():
        if bug.id == bug_id:
            return bug
    known = ", ".join(b.id for b in bundled_bugs())
    raise KeyError(f"unknown bug {bug_id!r}; bundled bugs: {known}")
