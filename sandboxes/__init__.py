"""sandboxes: compile and run untrusted code under limits.

async with open_sandbox() as sb:          # "bwrap" (default), "docker", "unsafe-local"
    r = await sb.exec(["gcc", "main.c"], files={"main.c": src}, limits=Limits(wall_s=30))
"""

from . import toolchains
from .base import Sandbox, concurrency, open_sandbox, set_concurrency
from .sync import SyncSandbox, open_sandbox_sync
from .types import ExecResult, ExecStatus, Limits, SandboxError

__all__ = [
    "ExecResult",
    "ExecStatus",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SyncSandbox",
    "concurrency",
    "open_sandbox",
    "open_sandbox_sync",
    "set_concurrency",
    "toolchains",
]
