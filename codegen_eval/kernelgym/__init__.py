"""Kernel-crash gym: build a kernel or module, boot it in QEMU, run a reproducer, read the crash.

from codegen_eval.kernelgym import KernelGym
env = KernelGym()
obs = env.reset("t0-null-deref")
result = env.step(patch_text)      # result.outcome: apply_failed | build_failed |
                                   #   boot_error | reproduced | resolved
"""

from codegen_eval.kernelgym.builders import (
    BuildResult,
    BuildStatus,
    KernelTree,
    ModuleBuilder,
    debian_kernel,
)
from codegen_eval.kernelgym.crash import CrashReport, Frame, parse_console, titles_match
from codegen_eval.kernelgym.env import KernelGym, Observation, SourceView
from codegen_eval.kernelgym.git_builder import GitKernelBuilder
from codegen_eval.kernelgym.kbench import BugSetupError, KBenchInputs, UnsupportedBug, kbench_inputs
from codegen_eval.kernelgym.records import (
    BugRecord,
    bundled_bug,
    bundled_bugs,
    load_record,
    load_records,
)
from codegen_eval.kernelgym.runner import ReproConfig, ReproResult, run_reproducer
from codegen_eval.kernelgym.scoring import Outcome, PatchScorer, StepResult

__all__ = [
    "BugRecord",
    "BugSetupError",
    "BuildResult",
    "BuildStatus",
    "CrashReport",
    "Frame",
    "GitKernelBuilder",
    "KBenchInputs",
    "KernelGym",
    "KernelTree",
    "ModuleBuilder",
    "Observation",
    "Outcome",
    "PatchScorer",
    "ReproConfig",
    "ReproResult",
    "SourceView",
    "StepResult",
    "UnsupportedBug",
    "bundled_bug",
    "bundled_bugs",
    "debian_kernel",
    "kbench_inputs",
    "load_record",
    "load_records",
    "parse_console",
    "run_reproducer",
    "titles_match",
]
