"""sandboxes: compile and run untrusted code under limits.

async with open_sandbox("bwrap") as sb:   # "bwrap", "docker", "unsafe-local"
    r = await sb.exec(["gcc", "main.c"], files={"main.c": src}, limits=Limits(wall_s=30))

With no backend named, `open_sandbox()` opens `current_backend()`: the innermost
`with use_backend(name):` block's, else $CODEGEN_SANDBOX (the user's default), else bwrap.
"""

# The built-in backends register themselves (`base.register_backend`) when imported; the
# registry in base imports none of them, so the backends and the seam form no import cycle.
from . import bwrap, docker_backend, local, toolchains  # noqa: F401
from ._host import sandbox_uid
from .base import (
    BACKEND_ENV,
    Sandbox,
    backends,
    concurrency,
    current_backend,
    open_sandbox,
    read_beneath,
    register_backend,
    set_concurrency,
    use_backend,
)
from .sync import SyncSandbox, open_sandbox_sync
from .types import ExecResult, ExecStatus, Limits, SandboxError

__all__ = [
    "BACKEND_ENV",
    "ExecResult",
    "ExecStatus",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SyncSandbox",
    "backends",
    "concurrency",
    "current_backend",
    "open_sandbox",
    "open_sandbox_sync",
    "read_beneath",
    "register_backend",
    "sandbox_uid",
    "set_concurrency",
    "toolchains",
    "use_backend",
]
