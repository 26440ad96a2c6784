"""Score one candidate patch for one bug: build (module or kernel), boot, reproduce, judge.

Outcomes: apply_failed, build_failed, boot_error, reproduced (with the title seen), resolved
(no crash in all K runs and a clean end of the boot), baseline_not_reproduced (the candidate
ran clean, but so did, or would have, the unpatched build: that proves nothing),
function_broken (no crash, but the bundled reproducer's behaviour checks failed: a "fix" that
makes the module refuse its work), tamper (the built code gained what no fix needs: an import
off the allow-list, port I/O or other privileged instructions, an indirect call, a constant
kernel address; decided on the host before the VM boots, see imports.py). Whether a
crash is the expected bug follows syzkaller's notion of the same bug: its title or one of its
ALT titles equals the expected title (or the expected title's kind-independent form, e.g.
"bad-access in f"), and a corrupted report never matches.

`resolved` says the patch is *plausible*: the crash no longer reproduces and the reproducer's
checks pass. Whether it is the developer's fix is reported beside it, for records that carry
the fix: `localization` (files and functions the candidate changed vs the fix's, localize.py)
and `matches_fix` (plausible and changing the code of every function the fix changes).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from codegen_eval.kernelgym.builders import (
    BuildResult,
    BuildStatus,
    KernelTree,
    ModuleBuilder,
    build_reproducer,
    debian_kernel,
)
from codegen_eval.kernelgym.buildrun import in_build_thread
from codegen_eval.kernelgym.git_builder import GitKernelBuilder
from codegen_eval.kernelgym.imports import Tamper, added_asm, screen_object_pairs
from codegen_eval.kernelgym.kbench import (
    BugSetupError,
    KBenchInputs,
    kbench_inputs,
    missing_tree_error,
)
from codegen_eval.kernelgym.localize import apply_exact, localize
from codegen_eval.kernelgym.patch_screen import screen_detectors, screen_patch
from codegen_eval.kernelgym.records import BugRecord
from codegen_eval.kernelgym.runner import (
    FUNCTION_BROKEN_RC,
    ReproConfig,
    ReproResult,
    run_reproducer,
)

CONFIG_DIR = Path(__file__).parent / "configs"


class Outcome(StrEnum):
    APPLY_FAILED = "apply_failed"
    BUILD_FAILED = "build_failed"
    BOOT_ERROR = "boot_error"
    REPRODUCED = "reproduced"
    RESOLVED = "resolved"
    BASELINE_NOT_REPRODUCED = "baseline_not_reproduced"
    FUNCTION_BROKEN = "function_broken"  # runs clean, but the module no longer does its job
    # The built code gained what no fix needs (detail: "tamper:<symbol>: why"); never booted.
    TAMPER = "tamper"


@dataclass(slots=True)
class StepResult:
    outcome: Outcome
    title: str | None = None  # crash title seen (reproduced)
    expected_title: str = ""
    matches_expected: bool = False
    detail: str = ""  # why: compiler errors, patch rejects, VM status
    console_excerpt: str = ""
    build_s: float = 0.0
    run_s: float = 0.0  # boot + K reproducer runs + shutdown
    boot_s: float | None = None  # part of run_s until /init started
    vm_status: str | None = None
    completed_runs: int = 0
    crashes: list[dict[str, Any]] = field(default_factory=list)
    # A candidate that is `resolved`: no crash in K runs and the checks passed.
    plausible: bool = False
    # For records that carry the developer's fix: plausible, and the candidate changes the
    # code of every function the fix changes (None: no fix known, or the candidate's
    # functions could not be read from the source). Evidence, not proof: see localize.py.
    matches_fix: bool | None = None
    localization: dict[str, Any] | None = None  # localize.Localization.to_dict()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _build_failure(result: BuildResult, expected: str) -> StepResult:
    outcome = (
        Outcome.APPLY_FAILED
        if result.status is BuildStatus.PATCH_APPLY_FAILED
        else Outcome.BUILD_FAILED
    )
    detail = result.log[-4000:] if outcome is Outcome.APPLY_FAILED else result.errors
    return StepResult(outcome, expected_title=expected, detail=detail, build_s=result.wall_s)


def _exit_meaning(rc: int) -> str:
    if rc in (124, 143):
        return "stopped at the time limit"
    if rc > 128:
        return f"killed by signal {rc - 128}"
    return "an error before its checks"


def judge(
    run: ReproResult,
    expected: str,
    runs: int,
    *,
    checks_function: bool = False,
    also: Sequence[str] = (),
) -> StepResult:
    """The step's outcome from one VM run. `checks_function`: the bug's reproducer also tests
    the module's intended behaviour (bundled bugs), so its exit code FUNCTION_BROKEN_RC turns
    a clean run into `function_broken`. `also`: more titles of the expected bug (the title the
    reader gives a record's own report, `BugRecord.expected_titles`)."""
    crash = run.crash
    base = {
        "expected_title": expected,
        "console_excerpt": run.excerpt(),
        "vm_status": str(run.vm.status),
        "completed_runs": run.completed_runs,
        "crashes": [
            {"title": c.title, "kind": c.kind, "functions": c.functions[:12], "files": c.files}
            for c in run.crashes
        ],
    }
    if crash is not None:
        return StepResult(
            Outcome.REPRODUCED,
            title=crash.title,
            matches_expected=any(crash.same_bug(t) for t in (expected, *also) if t),
            **base,  # type: ignore[arg-type]
        )
    if not run.booted:
        detail = f"the kernel did not reach /init (VM {run.vm.status})"
    elif not run.module_loaded:
        detail = "insmod failed"
    elif not run.finished or run.completed_runs < runs:
        detail = (
            f"the reproducer did not finish {runs} runs without a report "
            f"(VM {run.vm.status}, {run.completed_runs} runs)"
        )
    elif checks_function and FUNCTION_BROKEN_RC in run.exit_codes:
        failures = "; ".join(run.function_failures) or f"exit code {FUNCTION_BROKEN_RC}"
        detail = (
            "no crash, but the module no longer does its job: commands that must succeed "
            f"failed ({failures})"
        )
        return StepResult(Outcome.FUNCTION_BROKEN, detail=detail, **base)  # type: ignore[arg-type]
    elif checks_function and any(rc != 0 for rc in run.exit_codes):
        # A reproducer that checks behaviour ends with 0 or FUNCTION_BROKEN_RC. Anything else
        # means it never reached its checks: the module killed it, or put it to sleep until
        # the timeout, both of which also end every "crash".
        rc = next(rc for rc in run.exit_codes if rc != 0)
        detail = (
            f"no crash, but the reproducer did not finish its checks (exit code {rc}: "
            f"{_exit_meaning(rc)})"
        )
        return StepResult(Outcome.FUNCTION_BROKEN, detail=detail, **base)  # type: ignore[arg-type]
    else:
        return StepResult(Outcome.RESOLVED, **base)  # type: ignore[arg-type]
    return StepResult(Outcome.BOOT_ERROR, detail=detail, **base)  # type: ignore[arg-type]


def _git_ok(repo: Path, *args: str) -> bool:
    """Cheap checks before a long build: is it a repository, does it have the commit."""
    if not repo.is_dir():
        return False
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, timeout=120, check=False
    )
    return proc.returncode == 0


class PatchScorer:
    """Knows where kernels and modules come from for each kind of bug."""

    def __init__(
        self,
        config: ReproConfig | None = None,
        *,
        kasan_config: str = "kasan-6.1",
        use_cache: bool = True,
        linux_tree: str | Path | None = None,
    ) -> None:
        self.config = config or ReproConfig()
        # The user's Linux git checkout, for kBench records (kind "kbench").
        self.linux_tree = Path(linux_tree).expanduser() if linux_tree else None
        self._git: GitKernelBuilder | None = None
        self.use_cache = use_cache  # False: really rebuild modules / patched kernels (benchmarks)
        self.kasan_fragment = CONFIG_DIR / f"{kasan_config}.config"
        self._tree: KernelTree | None = None
        self._baselines: dict[str, StepResult] = {}  # bug id -> the unpatched build's result
        self._pristine_modules: dict[str, Path] = {}  # bug id -> the unpatched module

    @property
    def tree(self) -> KernelTree:
        if self._tree is None:
            self._tree = KernelTree(self.kasan_fragment)
        return self._tree

    @property
    def git(self) -> GitKernelBuilder:
        if self.linux_tree is None:
            raise BugSetupError("no Linux checkout: pass --linux-tree PATH")
        if self._git is None:
            self._git = GitKernelBuilder(self.linux_tree)
        return self._git

    def kbench_setup(self, bug: BugRecord) -> KBenchInputs:
        """Everything a kBench record needs before a (long) build starts, or a clear error."""
        if self.linux_tree is None:
            raise missing_tree_error(bug)
        inputs = kbench_inputs(bug)
        tree = self.linux_tree
        if not _git_ok(tree, "rev-parse", "--git-dir"):
            raise BugSetupError(f"--linux-tree {tree}: not a git checkout (or no such directory)")
        if not _git_ok(tree, "cat-file", "-e", f"{inputs.commit}^{{commit}}"):
            raise BugSetupError(
                f"bug {bug.id}: commit {inputs.commit} is not in --linux-tree {tree} "
                "(fetch the branch that has it, e.g. `git fetch <repo> <commit>`)"
            )
        return inputs

    def reproducer_source(self, bug: BugRecord) -> str:
        if bug.kind == "kbench":
            return self.kbench_setup(bug).reproducer
        if bug.c_reproducer is None:
            raise BugSetupError(f"bug {bug.id} has no C reproducer source")
        return bug.c_reproducer

    def _inject_patch(self, bug: BugRecord) -> str:
        inject = bug.kgym.get("inject")
        if not inject or bug.base_dir is None:
            return ""
        return (bug.base_dir / inject).read_text()

    def build(self, bug: BugRecord, patch: str) -> tuple[BuildResult, Path | None, Path | None]:
        """(result, kernel, module) for `bug` with candidate `patch` (may be empty)."""
        kind, tier = bug.kind, bug.tier
        refused = screen_patch(patch)
        if not refused and kind in ("tree", "kbench"):
            refused = screen_detectors(patch, bug.modified_files)
        if refused:  # once for every kind; KernelTree takes trusted inject patches beside it
            return BuildResult(BuildStatus.PATCH_APPLY_FAILED, refused), None, None
        if kind == "module" and tier == 0:
            dk = debian_kernel()
            assert bug.source_dir is not None
            res = ModuleBuilder(dk.headers, key=dk.release).build(
                bug.source_dir, patch, use_cache=self.use_cache
            )
            return res, dk.vmlinux(), res.artifacts.get("module")
        if kind == "module":
            base = self.tree.ensure_built()
            if not base.ok:
                raise RuntimeError(f"tier-1 kernel build failed:\n{base.errors}")
            assert bug.source_dir is not None
            res = self.tree.module_builder().build(bug.source_dir, patch, use_cache=self.use_cache)
            return res, base.artifacts["kernel"], res.artifacts.get("module")
        if kind == "tree":
            inject = self._inject_patch(bug)
            res = self.tree.build_patched([inject, patch], use_cache=self.use_cache)
            return res, res.artifacts.get("kernel"), None
        if kind == "kbench":
            inputs = self.kbench_setup(bug)
            # The commit already has the bug: only the candidate goes on top.
            res = self.git.build(inputs.commit, inputs.config, patch, use_cache=self.use_cache)
            return res, res.artifacts.get("kernel"), None
        raise BugSetupError(f"bug {bug.id}: unknown kind {kind!r} (module, tree or kbench)")

    async def score(self, bug: BugRecord, patch: str = "") -> StepResult:
        """Score `patch` (empty: the unpatched baseline). A candidate that runs clean is
        `resolved` only if the unpatched build reproduces the expected bug (checked once per
        bug, on demand)."""
        step = await self._score(bug, patch)
        if not patch.strip():
            self._baselines[bug.id] = step
            return step
        if step.outcome is Outcome.RESOLVED:
            base = await self.check_baseline(bug)
            if not (base.outcome is Outcome.REPRODUCED and base.matches_expected):
                step.outcome = Outcome.BASELINE_NOT_REPRODUCED
                seen = f", crash {base.title!r}" if base.title else ""
                step.detail = (
                    f"the unpatched build did not reproduce {bug.expected_title!r} "
                    f"(baseline {base.outcome}{seen}): a clean run proves nothing"
                )
        self.compare_with_fix(bug, patch, step)
        return step

    def compare_with_fix(self, bug: BugRecord, patch: str, step: StepResult) -> None:
        """Fill in `plausible`, and for a record with the developer's fix `localization` and
        `matches_fix`. Pure reading of the two diffs and the pre-image, on the host."""
        step.plausible = step.outcome is Outcome.RESOLVED
        fix = bug.developer_patch
        if not fix.strip():
            return
        loc = localize(patch, fix, lambda path: self.pre_image(bug, path))
        step.localization = loc.to_dict()
        step.matches_fix = None if loc.covers_fix is None else step.plausible and loc.covers_fix

    def pre_image(self, bug: BugRecord, path: str) -> str | None:
        """The text of `path` (-p1) that both the candidate and the fix apply to: a module's
        source, the tree with a tree bug's injected change, a kBench commit's file (from git,
        no worktree needed). None when it cannot be read."""
        if not path or path.startswith(("/", "-")) or ".." in path.split("/"):
            return None
        try:
            if bug.kind == "module" and bug.source_dir is not None:
                target = bug.source_dir / path
                return target.read_text(errors="replace") if target.is_file() else None
            if bug.kind == "tree":
                target = self.tree.source / path
                if not target.is_file():
                    return None
                return apply_exact(
                    target.read_text(errors="replace"), self._inject_patch(bug), path
                )
            if bug.kind == "kbench" and self.linux_tree is not None and bug.kernel_commit:
                proc = subprocess.run(
                    ["git", "-C", str(self.linux_tree), "show", f"{bug.kernel_commit}:{path}"],
                    capture_output=True, timeout=60, check=False,
                )  # fmt: skip
                return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None
        return None

    async def check_build(self, bug: BugRecord, patch: str) -> StepResult | None:
        """Apply and build `patch` without booting: None when it builds, else the
        apply_failed / build_failed result a step would give. Not a step; the build is cached
        like a step's, so the step that follows a passing check does not build again."""
        result, _, module = await in_build_thread(self.build, bug, patch)
        if not result.ok:
            return _build_failure(result, bug.expected_title)
        return await self.screen_build(bug, patch, result, module)

    async def _pristine_module(self, bug: BugRecord) -> Path:
        if bug.id not in self._pristine_modules:
            result, _, module = await in_build_thread(self.build, bug, "")
            if not result.ok or module is None:
                raise BugSetupError(f"the unpatched module of {bug.id} does not build:\n"
                                    f"{result.errors}")  # fmt: skip
            self._pristine_modules[bug.id] = module
        return self._pristine_modules[bug.id]

    async def screen_build(
        self, bug: BugRecord, patch: str, result: BuildResult, module: Path | None
    ) -> StepResult | None:
        """`tamper` when the candidate's built code gained what no fix needs (imports.py):
        a module against the unpatched module; a kernel tree's changed objects against the
        pristine build's, as the builder hands them over (`BuildResult.changed_objects`).
        None: nothing found."""
        if not patch.strip():
            return None
        tamper: Tamper | None = added_asm(patch)
        if tamper is None and bug.kind == "module" and module is not None:
            pristine = await self._pristine_module(bug)
            tamper = await screen_object_pairs(
                [(pristine, module)], label=f"the module {bug.kgym.get('module', '')}".strip()
            )
        elif tamper is None:
            pairs = tamper_pairs(result)
            if pairs:
                tamper = await screen_object_pairs(pairs)
        if tamper is None:
            return None
        return StepResult(Outcome.TAMPER, expected_title=bug.expected_title, detail=str(tamper))

    async def _score(self, bug: BugRecord, patch: str) -> StepResult:
        expected = bug.expected_title
        # Checked first so that a missing input is reported before a build of many minutes.
        repro_src = self.reproducer_source(bug)
        start = time.monotonic()
        # Builds run make/gcc for seconds to minutes: keep the event loop free meanwhile.
        result, kernel, module = await in_build_thread(self.build, bug, patch)
        build_s = time.monotonic() - start
        if not result.ok:
            out = _build_failure(result, expected)
            out.build_s = build_s
            return out
        refused = await self.screen_build(bug, patch, result, module)
        if refused is not None:
            refused.build_s = time.monotonic() - start
            return refused
        repro = await in_build_thread(build_reproducer, repro_src)
        if not repro.ok:
            raise BugSetupError(f"reproducer of {bug.id} does not compile:\n{repro.errors}")
        build_s = time.monotonic() - start
        assert kernel is not None
        t0 = time.monotonic()
        run = await run_reproducer(kernel, repro.artifacts["repro"], module, self.config)
        checks = bool(bug.kgym.get("repro_checks_function"))
        step = judge(
            run, expected, self.config.runs, checks_function=checks, also=bug.expected_titles
        )
        step.build_s, step.run_s = build_s, time.monotonic() - t0
        step.boot_s = run.boot_s
        return step

    async def check_baseline(self, bug: BugRecord) -> StepResult:
        """The unpatched build's result (cached per bug): it must reproduce the expected bug
        for a candidate to count as resolved."""
        if bug.id not in self._baselines:
            self._baselines[bug.id] = await self._score(bug, "")
        return self._baselines[bug.id]


def tamper_pairs(result: BuildResult) -> list[tuple[Path | None, Path]]:
    """The (pristine, candidate) object pairs a kernel builder hands over for the object
    screen (`BuildResult.changed_objects`: the objects of the C files the patches changed,
    kept with the image). None handed over: nothing to screen."""
    return [(p, c) for p, c in result.changed_objects if c.is_file()]


def bench_row(bug: BugRecord, baseline: StepResult | None = None, **fields: Any) -> dict[str, Any]:
    """One `kernel-gym bench` row (local and Slurm alike): the bug, its unpatched baseline
    (or, when `baseline` is None, the error fields that stopped it), plus `fields`."""
    row: dict[str, Any] = {"bug": bug.id, "tier": bug.tier, "expected": bug.expected_title}
    if baseline is None:
        return {**row, "reproduced": False, **fields}
    row["baseline"] = baseline.to_dict()
    row["reproduced"] = baseline.outcome is Outcome.REPRODUCED and baseline.matches_expected
    return {**row, **fields}
