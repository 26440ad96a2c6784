"""Run a CVDP harness in our sandbox: upstream's pytest + cocotb command, without docker.

Upstream mounts the problem's `rtl/ verif/ docs/ rundir/` at /code and the harness's
`src/` at /src in a container and runs the compose service's command (`pytest ...
/src/test_runner.py`) in /code/rundir with the `.env` variables set. We do the same in a
bwrap sandbox: the run directory holds `code/` and `src/`, bound at /code and /src, and the
command runs with the venv's Python (cocotb, pytest) and the system's Icarus Verilog.

What the verdict needs is kept where the design cannot reach it:

* `vvp` on the PATH is our shim (a trusted, read-only directory): before each simulation it
  copies the compiled design it was asked to run into `/sandbox/.cge/runs/N.vvp`, and after
  it the cocotb results file into `N.xml`, each made read-only. The scorer screens every
  design that ran (`screen.py`), so the candidate cannot run one design and show another.
* pytest writes its own JUnit report to `/sandbox/.cge/junit.xml` after every simulation
  has ended.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from codegen_eval.errors import CodegenEvalError
from codegen_eval.trusted_cache import cache_root
from sandboxes import ExecResult, Limits, Sandbox

CGE = ".cge"  # our directory in the run directory
RUNS = f"{CGE}/runs"
JUNIT = f"/sandbox/{CGE}/junit.xml"
MAX_RUNS = 64  # simulations one harness may start (parametrized tests)
MAX_FILE = 128 << 20  # largest file the harness may write, a compiled design included

_SHIM = """#!/bin/sh
# codegen-eval: archive the design vvp runs and the results cocotb writes (see harness.py).
# Shell builtins where it can (a process each costs CPU); files made read-only by the umask.
runs=/sandbox/{runs}
n=0
for f in "$runs"/*.vvp; do [ -e "$f" ] && n=$((n + 1)); done
[ "$n" -ge {max_runs} ] && {{ echo "cge-shim: too many simulations" >&2; exit 97; }}
design=""
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -M|-m|-l|-d) skip=1 ;;
    -*|+*) ;;
    *) design="$a"; break ;;
  esac
done
# cp refuses to write over a read-only file: a copy already there fails the run
(umask 0222 && exec cp "$design" "$runs/$n.vvp") || exit 98
{vvp} "$@"
rc=$?
if [ -n "$COCOTB_RESULTS_FILE" ] && [ -f "$COCOTB_RESULTS_FILE" ]; then
  (umask 0222 && exec cp "$COCOTB_RESULTS_FILE" "$runs/$n.xml") || exit 98
fi
exit $rc
"""


@functools.cache
def shim_dir() -> str:
    """A read-only (to sandboxes) directory holding our `vvp` shim."""
    vvp = shutil.which("vvp") or "/usr/bin/vvp"
    text = _SHIM.format(runs=RUNS, max_runs=MAX_RUNS, vvp=shlex.quote(vvp))
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    d = cache_root("codegen-cvdp", "CODEGEN_CVDP_DIR") / f"shim-{key}"
    if not (d / "vvp").is_file():
        tmp = d.with_name(f"{d.name}.tmp{os.getpid()}")
        tmp.mkdir(mode=0o755, exist_ok=True)
        (tmp / "vvp").write_text(text)
        (tmp / "vvp").chmod(0o755)
        try:
            tmp.rename(d)
        except OSError:  # another scorer won the race: its copy is the same text
            shutil.rmtree(tmp, ignore_errors=True)
    return str(d)


VENV_ENV = "CODEGEN_CVDP_VENV"
DEFAULT_VENV = "/opt/codegen-lab/cvdp-venv"


class HarnessSetupError(CodegenEvalError, RuntimeError):
    """The harness runtime (a venv with cocotb and pytest) is missing: our setup, not the
    candidate."""


def harness_venv() -> str:
    """The venv the harness runs in: the system's Python 3 (which a sandbox can read; ours
    may live under /root) with upstream's cocotb and pytest, made by scripts/setup.sh."""
    venv = os.environ.get(VENV_ENV) or DEFAULT_VENV
    if not os.access(os.path.join(venv, "bin", "pytest"), os.X_OK):
        raise HarnessSetupError(
            f"no CVDP harness runtime at {venv}: run scripts/setup.sh (it makes a venv of the "
            f"system's python3 with cocotb==2.0.1 and pytest) or set ${VENV_ENV}"
        )
    return venv


@functools.cache
def venv_bin_dir() -> str:
    return os.path.join(os.path.realpath(harness_venv()), "bin")


def python_binds() -> tuple[str, ...]:
    """Host directories the sandbox sees read-only: the vvp shim's and the harness venv."""
    venv = os.path.realpath(harness_venv())
    return (shim_dir(),) if venv.startswith("/usr/") else (shim_dir(), venv)


@dataclass(slots=True)
class HarnessRun:
    exec: ExecResult
    designs: list[str] = field(default_factory=list)  # each compiled design vvp ran
    results: list[str | None] = field(default_factory=list)  # its cocotb results XML
    junit: str | None = None  # pytest's report
    oversized: bool = False  # a design too large to read whole (never screened in part)

    @property
    def log(self) -> str:
        return (self.exec.stdout + "\n" + self.exec.stderr).strip()


def pytest_command(command: str) -> list[str] | None:
    """Upstream's compose command with our JUnit report added; None if it is not pytest."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or Path(argv[0]).name not in ("pytest", "py.test"):
        return None
    return ["pytest", *argv[1:], f"--junitxml={JUNIT}", "-p", "no:cacheprovider"]


async def run_harness(
    sb: Sandbox,
    files: dict[str, str],
    env: dict[str, str],
    argv: list[str],
    *,
    wall_s: float,
) -> HarnessRun:
    """Lay out `files` (paths `code/...` and `src/...`) and run `argv` in /code/rundir."""
    for d in ("code/rundir", "code/rtl", "code/verif", "code/docs", "src", RUNS):
        await sb.write_file(f"{d}/.keep", "")
    for path, text in files.items():
        await sb.write_file(path, text)
    assert sb.run_dir is not None
    # bwrap only: /code and /src are the run directory's own subdirectories, bound where
    # upstream's container has them (the .env and the tests name those absolute paths).
    sb.extra_rw_binds = (  # type: ignore[attr-defined]
        (str(sb.run_dir / "code"), "/code"),
        (str(sb.run_dir / "src"), "/src"),
    )
    venv_bin = venv_bin_dir()
    full_env = {
        **env,
        "PATH": f"{shim_dir()}:{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/code/rundir",
        # upstream's image has no pytest plugins; ours (appl's) would only cost start-up
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = ["/bin/sh", "-c", 'cd /code/rundir && exec "$@"', "cvdp", *argv]
    res = await sb.exec(
        cmd,
        env=full_env,
        limits=Limits(
            wall_s=wall_s,
            memory_mb=4096,
            pids=256,
            output_bytes=4 << 20,
            file_bytes=MAX_FILE,
            nofile=1024,
        ),
    )
    run = HarnessRun(res)
    for i in range(MAX_RUNS):
        try:
            design = await sb.read_file(f"{RUNS}/{i}.vvp", max_bytes=MAX_FILE + 1)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            break
        if len(design) > MAX_FILE:  # a design cut short could hide calls past the cut
            run.oversized = True
            break
        run.designs.append(design.decode("utf-8", errors="replace"))
        try:
            run.results.append(await sb.read_text(f"{RUNS}/{i}.xml", max_bytes=8 << 20))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            run.results.append(None)
    try:
        run.junit = await sb.read_text(f"{CGE}/junit.xml", max_bytes=8 << 20)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        run.junit = None
    return run
