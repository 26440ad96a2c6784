"""The environment agents work in.

    env = KernelGym(log_path="runs/kgym.jsonl")
    obs = env.reset("t0-null-deref")     # crash report, file listing, source access
    obs.source.read_function("kgym_null_write")
    res = env.step(patch_text)           # outcome, crash title, console excerpt
    env.close()

Every reset and step is appended to the JSONL log as it happens (one object per line).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codegen_eval.ctext import matching_brace
from codegen_eval.kernelgym.builders import touched_files
from codegen_eval.kernelgym.records import BugRecord, bundled_bugs
from codegen_eval.kernelgym.runner import ReproConfig
from codegen_eval.kernelgym.scoring import Outcome, PatchScorer, StepResult


class SourceView:
    """Read-only view of the code a candidate patch applies to (paths as in `patch -p1`).
    `overlay` holds files whose content differs from `root` (a tree bug's injected code)."""

    def __init__(self, root: Path, overlay: dict[str, str] | None = None) -> None:
        self.root, self.overlay = root, dict(overlay or {})

    def list_files(self, prefix: str = "", limit: int = 500) -> list[str]:
        base = self.root / prefix if prefix else self.root
        found = set(p for p in self.overlay if p.startswith(prefix))
        if base.is_dir():
            for path in base.rglob("*"):
                if len(found) >= limit:
                    break
                if path.is_file() and not path.name.startswith("."):
                    found.add(str(path.relative_to(self.root)))
        return sorted(found)[:limit]

    def read_file(self, path: str, start: int = 1, end: int | None = None) -> str:
        if path in self.overlay:
            text = self.overlay[path]
        else:
            full = (self.root / path).resolve()
            if not full.is_relative_to(self.root.resolve()) or not full.is_file():
                raise FileNotFoundError(path)
            text = full.read_text(errors="replace")
        lines = text.splitlines()
        return "\n".join(lines[start - 1 : end])

    def read_function(self, name: str, hint_files: list[str] | None = None) -> str | None:
        """The definition of C function `name` (first match), with its file and line."""
        pattern = re.compile(rf"^[A-Za-z_][^;{{}}()]*\b{re.escape(name)}\s*\(", re.M)
        candidates = list(dict.fromkeys([*(hint_files or []), *self.overlay]))
        candidates += [f for f in self.list_files(limit=2000) if f.endswith((".c", ".h"))]
        for rel in dict.fromkeys(candidates):
            try:
                text = self.read_file(rel)
            except (FileNotFoundError, OSError):
                continue
            if found := _extract(text, pattern):
                line, body = found
                return f"// {rel}:{line}\n{body}"
        return self._grep_function(name, pattern)

    def _grep_function(self, name: str, pattern: re.Pattern[str]) -> str | None:
        # Large trees: let grep find candidate files instead of reading 60k files in Python.
        proc = subprocess.run(
            ["grep", "-rlE", "--include=*.c", "--include=*.h", rf"\b{name}\s*\(", "."],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        for rel in proc.stdout.split():
            rel = rel.removeprefix("./")
            if found := _extract(self.read_file(rel), pattern):
                return f"// {rel}:{found[0]}\n{found[1]}"
        return None


def _extract(text: str, pattern: re.Pattern[str]) -> tuple[int, str] | None:
    for m in pattern.finditer(text):
        brace = text.find("{", m.end())
        semi = text.find(";", m.end())
        if brace == -1 or (semi != -1 and semi < brace):
            continue  # a declaration or a call, not a definition
        close = matching_brace(text, brace)
        if close is not None:
            return text.count("\n", 0, m.start()) + 1, text[m.start() : close + 1]
    return None


@dataclass(slots=True)
class Observation:
    bug_id: str
    title: str
    crash_report: str
    files: list[str]
    source: SourceView
    baseline: StepResult | None = None
    description: str = ""
    frames: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bug_id": self.bug_id,
            "title": self.title,
            "crash_report": self.crash_report,
            "files": self.files[:200],
            "description": self.description,
            "baseline": self.baseline.to_dict() if self.baseline else None,
        }


class StepScorer(Protocol):
    """What KernelGym needs to judge: the local `PatchScorer` has it, and so does
    `distributed.SlurmStepScorer`."""

    async def score(self, bug: BugRecord, patch: str = "") -> StepResult: ...

    async def check_baseline(self, bug: BugRecord) -> StepResult: ...


class KernelGym:
    def __init__(
        self,
        bugs: list[BugRecord] | None = None,
        *,
        runs: int = 3,
        accel: str = "auto",
        log_path: str | Path | None = None,
        check_baseline: bool = True,
        linux_tree: str | Path | None = None,
        step_scorer: StepScorer | None = None,
    ) -> None:
        self.bugs = {b.id: b for b in (bugs if bugs is not None else bundled_bugs())}
        # linux_tree: the user's Linux git checkout, needed by kBench records only.
        self.scorer = PatchScorer(ReproConfig(runs=runs, accel=accel), linux_tree=linux_tree)
        # What builds, boots and judges (baselines and steps): the local PatchScorer, or another
        # with its interface (distributed.SlurmStepScorer: every step a Slurm job). Source
        # views always come from the local PatchScorer's trees.
        self.judge: StepScorer = step_scorer or self.scorer
        self.check_baseline = check_baseline
        self.log_path = Path(log_path) if log_path else None
        self.bug: BugRecord | None = None
        self.steps: list[StepResult] = []
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # ------------------------------------------------------------------ log
    def _log(self, event: str, **data: Any) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a") as fh:
            fh.write(json.dumps({"event": event, "time": time.time(), **data}) + "\n")

    # ------------------------------------------------------------------ source view
    def _source_view(self, bug: BugRecord) -> SourceView:
        if bug.kind == "module" and bug.source_dir is not None:
            return SourceView(bug.source_dir)
        if bug.kind == "tree":
            inject = (bug.base_dir / bug.kgym["inject"]).read_text() if bug.base_dir else ""
            tree = self.scorer.tree.source
            overlay: dict[str, str] = {}
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="kgym-view-")
            work = Path(self._tmp.name) / bug.id
            for rel in touched_files(inject):
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                (work / rel).write_bytes((tree / rel).read_bytes())
            subprocess.run(
                ["patch", "-p1", "--batch", "--silent"],
                cwd=work,
                input=inject,
                text=True,
                check=True,
                timeout=60,
            )
            for rel in touched_files(inject):
                overlay[rel] = (work / rel).read_text()
            return SourceView(tree, overlay)
        if bug.kind == "kbench":
            # The worktree at the bug's commit; every build resets it to that commit.
            return SourceView(self.scorer.git.worktree(self.scorer.kbench_setup(bug).commit))
        raise NotImplementedError(f"no source view for bug kind {bug.kind!r}")

    # ------------------------------------------------------------------ API
    async def areset(self, bug_id: str) -> Observation:
        if bug_id not in self.bugs:
            raise KeyError(f"unknown bug {bug_id!r}; known: {', '.join(sorted(self.bugs))}")
        bug = self.bugs[bug_id]
        if bug.kind == "kbench":
            self.scorer.kbench_setup(bug)  # a missing input fails here, before any build
        self.bug, self.steps = bug, []
        baseline = await self.judge.check_baseline(bug) if self.check_baseline else None
        report = baseline.console_excerpt if baseline else (bug.raw_crash_report or "")
        source = self._source_view(bug)
        if bug.kind == "module":
            files = source.list_files()
        elif bug.kind == "tree":
            files = list(source.overlay)
        else:  # a whole kernel tree: the files the crash report points at
            files = baseline.crashes[0]["files"] if baseline and baseline.crashes else []
        obs = Observation(
            bug_id=bug.id,
            title=(baseline.title if baseline and baseline.title else bug.expected_title),
            crash_report=report,
            files=files,
            source=source,
            baseline=baseline,
            description=str(bug.kgym.get("description", "")),
            frames=(baseline.crashes[0]["functions"] if baseline and baseline.crashes else []),
        )
        self._log("reset", bug=bug.id, observation=obs.to_dict())
        return obs

    async def astep(self, patch_text: str) -> StepResult:
        """Score one patch. The result handed back is what an agent may see: the
        localization against the developer's fix (its files and functions, and whether the
        patch covers them) is left out, since it would show the agent where the fix is. The
        full result is kept in `steps` and the log, for the harness's own report."""
        if self.bug is None:
            raise RuntimeError("call reset(bug_id) before step()")
        if not patch_text.strip():
            # scoring "" would boot the unpatched kernel and read as `reproduced`
            raise ValueError("empty patch: a step needs a change (reset() shows the crash)")
        result = await self.judge.score(self.bug, patch_text)
        self.steps.append(result)
        self._log(
            "step", bug=self.bug.id, n=len(self.steps), patch=patch_text, result=result.to_dict()
        )
        return dataclasses.replace(result, matches_fix=None, localization=None)

    async def acheck_build(self, patch_text: str) -> StepResult | None:
        """Compiler feedback without spending a step: None when `patch_text` applies and
        builds here, else the apply_failed / build_failed result. Always built locally (with
        a Slurm judge the step builds again on its node); logged as a `build_check`."""
        if self.bug is None:
            raise RuntimeError("call reset(bug_id) before check_build()")
        failed = await self.scorer.check_build(self.bug, patch_text)
        self._log(
            "build_check", bug=self.bug.id, patch=patch_text,
            outcome=str(failed.outcome) if failed else "built",
        )  # fmt: skip
        return failed

    def reset(self, bug_id: str) -> Observation:
        return asyncio.run(self.areset(bug_id))

    def step(self, patch_text: str) -> StepResult:
        return asyncio.run(self.astep(patch_text))

    @property
    def solved(self) -> bool:
        return bool(self.steps) and self.steps[-1].outcome is Outcome.RESOLVED

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
