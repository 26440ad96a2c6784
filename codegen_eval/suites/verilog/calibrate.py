"""The reference's own run on this machine's toolchain: measured once, cached on disk.

For each problem the reference is compiled and simulated through exactly the pipeline a
candidate goes through (`harness.compile_and_run`, judged without the screen). That run gives

* whether the reference passes here at all (a problem whose reference fails is excluded,
  with the measured reason, rather than blamed on every candidate);
* the number of samples the testbench compares (a candidate run must match it exactly, so a
  run that ends early, for whatever reason, fails);
* the model of the harness the screen compares every candidate's compile with.

Results are cached per problem (harness text + reference text) and toolchain version
(`iverilog -V`, `vvp -V`) in `$CODEGEN_VERILOG_CALIBRATION` or
`$XDG_CACHE_HOME/codegen-lab/verilog-calibration/` (default `~/.cache/...`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen_eval.errors import CodegenEvalError
from sandboxes import open_sandbox
from sandboxes.toolchains.recipes import tool_version

from .harness import HarnessSpec, compile_and_run
from .judge import judge, reason_of
from .screen import HarnessModel, harness_model

CACHE_ENV = "CODEGEN_VERILOG_CALIBRATION"
_FORMAT = 6  # bump when what is stored or how it is measured changes (6: ulimit -f 0)


@dataclass(slots=True)
class Calibration:
    ok: bool  # the reference passes its own testbench here
    reason: str  # why not (failure class + first line), "" when ok
    failure_class: str | None
    samples: int | None  # samples the testbench compared in the reference's run
    model: HarnessModel | None  # None when the reference did not even compile
    toolchain: str
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "ok": self.ok,
            "reason": self.reason,
            "failure_class": self.failure_class,
            "samples": self.samples,
            "model": self.model.to_json() if self.model else None,
            "toolchain": self.toolchain,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Calibration:
        return cls(
            bool(d["ok"]),
            str(d["reason"]),
            d.get("failure_class"),
            d.get("samples"),
            HarnessModel.from_json(d["model"]) if d.get("model") else None,
            str(d["toolchain"]),
            float(d.get("seconds", 0.0)),
        )


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codegen-lab" / "verilog-calibration"


class ToolchainMissing(CodegenEvalError, FileNotFoundError):
    """iverilog or vvp is not installed: nothing can be judged (not the candidate's fault)."""


async def toolchain_id() -> str:
    iv, vvp = await tool_version("iverilog", "-V"), await tool_version("vvp", "-V")
    if "missing" in (iv, vvp):
        raise ToolchainMissing(
            "Icarus Verilog (iverilog, vvp) is not installed: apt-get install iverilog"
        )
    return f"{iv} | {vvp}"


def calibration_key(spec: HarnessSpec, reference: str, toolchain: str) -> str:
    h = hashlib.sha256(spec.key_material())
    h.update(hashlib.sha256(reference.encode()).digest())
    h.update(toolchain.encode())
    h.update(str(_FORMAT).encode())
    return h.hexdigest()


_done: dict[str, Calibration] = {}
_inflight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future]] = (
    weakref.WeakKeyDictionary()
)


def _load(key: str) -> Calibration | None:
    path = cache_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("format") != _FORMAT:
            return None
        return Calibration.from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(key: str, cal: Calibration) -> None:
    d = cache_dir()
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(cal.to_json(), f)
        os.replace(tmp, d / f"{key}.json")  # atomic: concurrent runs never read half a file


async def calibrate(
    spec: HarnessSpec,
    reference: str,
    *,
    backend: str | None = None,
    compile_wall_s: float = 30.0,
    sim_wall_s: float = 30.0,
) -> Calibration:
    """The reference's calibration for `spec` (memoized in the process and on disk;
    concurrent callers for one problem share one run)."""
    toolchain = await toolchain_id()
    key = calibration_key(spec, reference, toolchain)
    if key in _done:
        return _done[key]
    cached = _load(key)
    if cached is not None:
        _done[key] = cached
        return cached
    loop = asyncio.get_running_loop()
    flights = _inflight.setdefault(loop, {})
    if key in flights:
        return await asyncio.shield(flights[key])
    fut: asyncio.Future[Calibration] = loop.create_future()
    flights[key] = fut
    try:
        cal = await _measure(spec, reference, toolchain, backend, compile_wall_s, sim_wall_s)
        _done[key] = cal
        _store(key, cal)
        fut.set_result(cal)
        return cal
    except BaseException as exc:
        fut.set_exception(exc)
        fut.exception()  # retrieved: no "never retrieved" warning when nobody else waits
        raise
    finally:
        flights.pop(key, None)


async def _measure(
    spec: HarnessSpec,
    reference: str,
    toolchain: str,
    backend: str | None,
    compile_wall_s: float,
    sim_wall_s: float,
) -> Calibration:
    t0 = time.monotonic()
    async with open_sandbox(backend) as sb:
        out = await compile_and_run(
            sb, spec, reference, compile_wall_s=compile_wall_s, sim_wall_s=sim_wall_s
        )
    score = judge(
        out, spec, sim_wall_s=sim_wall_s, model=None, expected_samples=None, check_screen=False
    )
    model = None
    if out.design is not None:
        with contextlib.suppress(ValueError):
            model = harness_model(
                out.design,
                top=spec.top,
                tb_top=spec.tb_top.replace("__TAG__", out.tag),
                tag=out.tag,
            )
    ok = score.status == "pass"
    samples = int(score.metrics["samples"]) if "samples" in score.metrics else None
    return Calibration(
        ok=ok,
        reason="" if ok else reason_of(score),
        failure_class=score.failure_class,
        samples=samples if ok else None,
        model=model,
        toolchain=toolchain,
        seconds=round(time.monotonic() - t0, 3),
    )


def forget_memory() -> None:
    """Drop the in-process memo (tests that switch cache directories)."""
    _done.clear()


__all__ = [
    "CACHE_ENV",
    "Calibration",
    "ToolchainMissing",
    "cache_dir",
    "calibrate",
    "calibration_key",
    "forget_memory",
    "toolchain_id",
]
