"""sandboxes: compile and run untrusted code under limits.

async with open_sandbox() as sb:          # "bwrap" (default), "docker", "unsafe-local"
    r = await sb.exec(["gcc", "main.c"], files={"main.c": src}, limits=Limits(wall_s=30))
"""

# The built-in backends register themselves (`base.register_backend`) when imported; the
# registry in base imports none of them, so the backends and the seam form no import cycle.
from . import bwrap, docker_backend, local, toolchains  # noqa: F401
from .base import Sandbox, backends, concurrency, open_sandbox, register_backend, set_concurrency
from .sync import SyncSandbox, open_sandbox_sync
from .types import ExecResult, ExecStatus, Limits, SandboxError

__all__ = [
    "ExecResult",
    "ExecStatus",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SyncSandbox",
    "backends",
    "concurrency",
    "open_sandbox",
    "open_sandbox_sync",
    "register_backend",
    "set_concurrency",
    "toolchains",
]
