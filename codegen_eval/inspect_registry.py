"""The module the `inspect_ai` entry point names (pyproject.toml:
`[project.entry-points.inspect_ai] codegen_eval = "codegen_eval.inspect_registry"`).

Inspect imports it to find what this package registers: importing a module runs its
`@sandboxenv` / `@task` decorators. Needs the `inspect` extra (`pip install .[inspect]`).
"""

from codegen_eval.inspect_tasks import *  # noqa: F403  (tasks codegen_eval/verilog, ...)
from sandboxes.inspect_docker import CodegenDockerSandboxEnvironment  # noqa: F401
from sandboxes.inspect_sandbox import BwrapSandboxEnvironment  # noqa: F401  (sandbox "bwrap")
