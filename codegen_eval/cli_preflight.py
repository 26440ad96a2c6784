"""Checks made before a `codegen-eval run` does any work, each failing in one line: the model
server answers (or the embedded model is installed), the sandbox backend runs `true`, the
Slurm cluster takes our job options."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from codegen_eval.cli_inputs import CliError


def slurm_executor(
    args: argparse.Namespace, plugins: list[str], log_path: Path, recorded: dict[str, Any]
) -> Any:
    """--executor slurm: the executor, after checking that the cluster answers and takes our
    job options (a one-line error before any work otherwise)."""
    from codegen_eval.executors.mpi_step import MPI_LAUNCHER_ENV
    from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions
    from codegen_eval.executors.slurm_client import SlurmUnavailable

    for name in ("slurm_batch_size", "slurm_cpus_per_task", "slurm_max_attempts"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    options = SlurmOptions(
        partition=args.slurm_partition,
        account=args.slurm_account,
        time=args.slurm_time,
        mem=args.slurm_mem,
        batch_size=args.slurm_batch_size,
        cpus_per_task=args.slurm_cpus_per_task,
        max_attempts=args.slurm_max_attempts,
        workdir=Path(args.slurm_workdir) if args.slurm_workdir else Path(f"{log_path}.slurm"),
    )
    task_options = dict(recorded["options"])
    if task_options.get("pareval") and task_options.get("pareval_cores") is None:
        # ParEval's launch plan is capped by "this machine's cores": the compute node must
        # plan the sweep the submitting machine planned, or sample ids and configs differ.
        task_options["pareval_cores"] = os.cpu_count() or 1
    spec = {
        "factory": "codegen_eval.cli:tasks_from_options",
        "kwargs": {"options": task_options, "plugins": list(plugins)},
        # the worker scores in a use_backend block of this name (its tasks get it too, as
        # the recorded `sandbox` option): never through the compute node's environment
        "backend": args.sandbox,
        "env": {MPI_LAUNCHER_ENV: "srun" if args.slurm_mpi_steps else "sandbox"},
    }
    executor = SlurmExecutor(options, spec)
    try:
        executor.check()
    except SlurmUnavailable as exc:
        raise CliError(f"--executor slurm: {exc}") from None
    return executor


def model_preflight(alias: str, base_url: str | None) -> dict[str, Any]:
    """Configure --base-url, then check that an HTTP model server answers; a dead one is named
    with its URL before any work starts."""
    import httpx

    from appl.config import configure, get_config
    from appl.errors import ConfigError

    if base_url:
        configure(
            models={
                alias: {
                    "provider": "openai",
                    "base_url": base_url,
                    "api_key": os.environ.get("OPENAI_API_KEY", "none"),
                }
            }
        )
    try:
        mc = get_config().model(alias)
    except ConfigError as exc:
        raise CliError(
            f"{exc}; or give --base-url URL to use an OpenAI-compatible server under this name"
        ) from None
    if mc.provider == "local" and not mc.base_url:
        local_model_preflight(alias, mc.options)
    if mc.provider == "openai" and mc.base_url:
        url = mc.base_url.rstrip("/") + "/models"
        try:
            httpx.get(url, timeout=5.0)
        except httpx.HTTPError as exc:
            raise CliError(
                f"model {alias!r}: the server at {mc.base_url} is not reachable ({exc})"
            ) from None
    return {"model": alias, "provider": mc.provider, "base_url": mc.base_url or ""}


def local_model_preflight(alias: str, options: dict[str, Any]) -> None:
    """The embedded model needs its server package and weights; without them every request
    would fail, so say so before any work (starting the server is left to the run)."""
    from appl.errors import ApplError
    from appl.local.catalog import resolve_spec
    from appl.local.server import server_package_available
    from appl.local.weights import weights_path

    try:
        spec = resolve_spec(options.get("model") or options.get("local_model"))
    except ApplError as exc:
        raise CliError(f"model {alias!r}: {exc}") from None
    if not server_package_available():
        raise CliError(
            f"model {alias!r}: the local model server (llama-cpp-python[server]) is not "
            "installed; run `scripts/setup.sh --local-model`, or use --model/--base-url for "
            "another server"
        )
    path = weights_path(spec)
    if not path.exists():
        raise CliError(
            f"model {alias!r}: local model {spec.name} is not installed (no {path}); run "
            f"`python -m appl.local fetch --model {spec.name}` or `scripts/setup.sh --local-model`"
        )


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def probe_backend(backend: str) -> None:
    """Open a sandbox of `backend` and run `true` in it once, so that a backend that cannot
    work (no engine, no bwrap, an unknown name) stops the run before any work, in one line."""
    from sandboxes import Limits, SandboxError, open_sandbox

    async def probe() -> Any:
        async with open_sandbox(backend) as sb:
            return await sb.exec(["true"], limits=Limits(wall_s=30))

    try:
        result = asyncio.run(probe())
    except (SandboxError, OSError) as exc:
        raise CliError(f"sandbox backend {backend!r} is not usable: {one_line(exc)}") from None
    if result.status != "ok":
        raise CliError(
            f"sandbox backend {backend!r} is not usable: `true` ended {result.status} "
            f"({one_line(result.stderr[-300:]) or 'no output'})"
        )
