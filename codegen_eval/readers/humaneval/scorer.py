"""Scoring HumanEval-style samples with verdicts the candidate cannot forge.

Trusted mode (the default; see docs/codegen-eval.md, "HumanEval-style JSONL"):
  python  rpc_trusted.py runs prompt + test in a checker process with no candidate code and
          calls the candidate's function, loaded by rpc_candidate.py in a second process
          behind he_guard, over a pipe that carries plain data only.
  c, cpp  a checker compiled from prompt + stub + test (cxx.py, he_core.h, he_rpc.hpp) calls
          the candidate's function, compiled with a server main(), in a second process.
  Either checker prints one SipHash-tagged verdict line; the key is drawn here per run and
  given only to the checker on stdin. Lines without a valid tag are ignored.
In-process mode (a C/C++ signature out of the RPC's reach, a checker that does not build, or
trusted=False): prompt + candidate + test in one process, exit status 0 passes. The candidate
can forge that verdict, so such a Score says so (metrics["forgeable"] = 1, explanation).
"""

from __future__ import annotations

import json
import re
from typing import Any

from codegen_eval import tagging
from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.readers._renamed import backend_keyword
from codegen_eval.readers.humaneval import cxx
from codegen_eval.readers.humaneval.trusted import (
    C_HEADERS,
    PCH_FLAGS,
    cache_root,
    candidate_pch,
    compiled_checker,
    header_text,
    python_harness,
)
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecResult, Limits, open_sandbox

__all__ = ["HumanEvalScorer", "assemble", "candidate_program"]

_ASSERT = re.compile(r"AssertionError|Assertion .* failed|assert.*failed", re.IGNORECASE)
VERDICT_PREFIX = "HEV "
_RESOURCE = ("resource_limit", "timeout")


def _defines(code: str, entry: str) -> bool:
    return (
        bool(entry)
        and re.search(rf"\b{re.escape(entry)}\s*\([^;{{]*\)\s*(const\s*)?\{{", code) is not None
    )


def _entry(sample: Sample) -> str:
    entry = str(sample.metadata.get("entry_point", ""))
    if entry or sample.metadata.get("language") == "python":
        return entry
    sig = cxx.parse_signature(str(sample.metadata.get("prompt", sample.input)))
    return sig.name if sig else ""


def candidate_program(sample: Sample, code: str) -> str:
    """The candidate's code in its prompt's context, without the test. A C/C++ candidate that
    repeats the signature replaces the prompt's (C allows no second definition); the
    prompt's #include and using lines are kept."""
    lang = sample.metadata.get("language", "python")
    prompt = str(sample.metadata.get("prompt", sample.input))
    if lang == "python":
        return f"{prompt}{code}\n"
    if _defines(code, _entry(sample)):
        keep = [ln for ln in prompt.splitlines() if ln.lstrip().startswith(("#include", "using "))]
        return "\n".join(keep) + f"\n{code}\n"
    return f"{prompt}{code}\n"


def assemble(sample: Sample, code: str) -> str:
    """The in-process program: candidate and test in one process (forgeable)."""
    test = sample.files.get("test", "")
    if sample.metadata.get("language", "python") == "python":
        return f"{candidate_program(sample, code)}\n{test}\n\ncheck({sample.metadata.get('entry_point', '')})\n"
    return f"{candidate_program(sample, code)}{test}\n"


def _libs(*sources: str) -> list[str]:
    return ["-lm"] + (["-lcrypto"] if any("openssl/" in s for s in sources) else [])


def _compiler(lang: str) -> tuple[str, str, list[str]]:
    if lang == "c":
        return "main.c", "gcc", ["-std=gnu11", "-O2"]
    return "main.cpp", "g++", ["-std=c++17", "-O2"]


class HumanEvalScorer:
    """wall_s bounds a sample (every call and the test together), call_s one call."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        wall_s: float = 10.0,
        call_s: float = 5.0,
        trusted: bool = True,
        sandbox: str | None = None,  # deprecated spelling of backend
    ) -> None:
        self.backend = backend_keyword(backend, sandbox, "HumanEvalScorer")
        self.wall_s = wall_s
        self.call_s = min(call_s, wall_s)
        self.trusted = trusted

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="no code in the reply")
        lang = sample.metadata.get("language", "python")
        if not self.trusted:
            return await self._in_process(sample, candidate.code, "trusted mode switched off")
        if lang == "python":
            return await self._python(sample, candidate.code)
        return await self._compiled(sample, candidate.code, lang)

    # -- trusted: python -----------------------------------------------------------------------
    async def _python(self, sample: Sample, code: str) -> Score:
        harness = await python_harness()
        key = tagging.new_key()
        request = {
            "key": key.hex(),
            "prompt": str(sample.metadata.get("prompt", sample.input)),
            "test": sample.files.get("test", ""),
            "entry": str(sample.metadata.get("entry_point", "")),
            "call_s": self.call_s,
            "total_s": self.wall_s,
            "guard": str(harness.guard),
            "runner": str(harness.candidate),
            "source": "cand.py",
            "log": "cand.log",
        }
        body = json.dumps(request).encode()
        async with open_sandbox(self.backend, extra_ro_binds=(str(harness.root),)) as sb:
            r = await sb.exec(
                ["python3", "-I", str(harness.trusted)],
                files={"cand.py": candidate_program(sample, code)},
                stdin=f"{len(body)}\n".encode() + body,
                limits=Limits(wall_s=self.wall_s + 5, memory_mb=1024),
            )
            log = await _log(sb)
        return _verdict(r, key, log)

    # -- trusted: c, cpp -----------------------------------------------------------------------
    async def _compiled(self, sample: Sample, code: str, lang: str) -> Score:
        prompt = str(sample.metadata.get("prompt", sample.input))
        test = sample.files.get("test", "")
        sig = cxx.parse_signature(prompt, str(sample.metadata.get("entry_point", "")))
        if sig is None:
            return await self._in_process(sample, code, "no open function at the prompt's end")
        if (why := cxx.unsupported(sig, lang)) is not None:
            return await self._in_process(sample, code, why)
        src, cc, flags = _compiler(lang)
        # The test's code runs on the candidate's answers: bounds-checked containers and
        # hardened libc calls turn an out-of-range answer into an abort (wrong_answer), never
        # into reads of stale memory.
        checker_flags = [*flags, "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2"]
        if lang != "c":
            checker_flags.append("-D_GLIBCXX_ASSERTIONS")
        if sample.metadata.get("allow_nan"):  # else a NaN in an answer is wrong (he_core.h)
            checker_flags.append("-DHE_ALLOW_NAN=1")
        checker, why = await compiled_checker(
            cxx.trusted_source(sig, prompt, test, lang),
            lang,
            checker_flags,
            _libs(prompt, test),
            self.backend,
        )
        if checker is None:
            return await self._in_process(sample, code, why.splitlines()[0][:300])
        harness = await python_harness()  # for the guard
        program = cxx.candidate_source(sig, candidate_program(sample, code), lang)
        if lang == "c":
            build = [cc, *flags]
        else:
            pch = await candidate_pch(self.backend)
            build = [cc, *PCH_FLAGS, "-include", str(pch) if pch else "he_rpc.hpp"]
        key = tagging.new_key()
        async with open_sandbox(self.backend, extra_ro_binds=(str(cache_root()),)) as sb:
            c = await sb.exec(
                [*build, "-o", "prog", src, *_libs(program)],
                files={src: program, **{h: header_text(h) for h in C_HEADERS}},
                limits=Limits(wall_s=60, memory_mb=2048),
            )
            if (fc := classify_compile_result(c)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(c.stderr))
            line = (
                f"{key.hex()} {int(self.call_s * 1000)} {int(self.wall_s * 1000)} "
                f"{harness.guard} ./prog cand.log\n"
            )
            r = await sb.exec(
                [str(checker)],
                stdin=line,
                limits=Limits(wall_s=self.wall_s + 5, memory_mb=1024),
            )
            log = await _log(sb)
        return _verdict(r, key, log)

    # -- in-process (forgeable) ----------------------------------------------------------------
    async def _in_process(self, sample: Sample, code: str, reason: str) -> Score:
        score = await self._run_in_process(sample, code)
        score.metrics["forgeable"] = 1.0
        note = f"forgeable in-process verdict ({reason})"
        score.explanation = f"{note}\n{score.explanation}" if score.explanation else note
        return score

    async def _run_in_process(self, sample: Sample, code: str) -> Score:
        lang = sample.metadata.get("language", "python")
        program = assemble(sample, code)
        run_limits = Limits(wall_s=self.wall_s, memory_mb=512)
        async with open_sandbox(self.backend) as sb:
            if lang == "python":
                r = await sb.exec(
                    ["python3", "prog.py"], files={"prog.py": program}, limits=run_limits
                )
                if r.ok:
                    return Score(1.0, "pass", metrics={"runtime_s": r.wall_s})
                text = r.stderr + r.stdout
                if "SyntaxError" in text or "IndentationError" in text:
                    fc = "compile_error:syntax"
                elif "AssertionError" in text:
                    fc = FailureClass.WRONG_ANSWER
                elif "NameError" in text or "ImportError" in text:
                    fc = "compile_error:undeclared"
                else:
                    fc = classify_exec(r) or FailureClass.NONZERO_EXIT
                return Score(0.0, "fail", fc, explanation=short_log(text))
            src, cc, flags = _compiler(lang)
            c = await sb.exec(
                [cc, *flags, "-o", "prog", src, *_libs(program)],
                files={src: program},
                limits=Limits(wall_s=60, memory_mb=2048),
            )
            if (fc := classify_compile_result(c)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(c.stderr))
            r = await sb.exec(["./prog"], limits=run_limits)
            if r.ok:
                return Score(1.0, "pass", metrics={"runtime_s": r.wall_s})
            fc = classify_exec(r) or FailureClass.NONZERO_EXIT
            if _ASSERT.search(r.stderr) and fc.startswith(
                ("runtime_crash:SIGABRT", "nonzero_exit")
            ):
                fc = FailureClass.WRONG_ANSWER
            return Score(0.0, "fail", fc, explanation=short_log(r.stderr + r.stdout))


async def _log(sb: Any) -> str:
    """The head of the candidate's own output (for a human reading a failure; never
    evidence for a verdict)."""
    try:
        return await sb.read_text("cand.log", max_bytes=2000)
    except (OSError, ValueError):
        return ""


def _verdict(r: ExecResult, key: bytes, log: str) -> Score:
    """The Score from the checker's tagged line; only that line counts."""
    bodies = tagging.tagged_lines(r.stdout, key, VERDICT_PREFIX)
    limit_class = classify_exec(r, check_sanitizers=False)
    if len(bodies) != 1:
        fc = limit_class if limit_class and limit_class.startswith(_RESOURCE) else None
        why = "no verdict from the checker" if not bodies else "several verdict lines"
        return Score(
            0.0,
            "fail",
            fc or "tamper:no_verdict",
            explanation=short_log(f"{why}\n{r.stderr}\n{log}"),
        )
    v = json.loads(bodies[0][len(VERDICT_PREFIX) :])
    metrics = {"runtime_s": r.wall_s, "calls": float(v.get("calls", 0))}
    if v["verdict"] == "pass":
        return Score(1.0, "pass", metrics=metrics)
    fc = str(v.get("class") or FailureClass.NONZERO_EXIT)
    # The checker saw its candidate killed; the sandbox knows why (memory, pids, output). The
    # checker itself exits 0 after its verdict, so an OOM kill of the candidate's process is
    # not the run's status but the cgroup's count (r.oom_killed): the candidate, which may not
    # fork, is then the process that was killed for memory.
    if fc == "runtime_crash:SIGKILL" and r.oom_killed:
        fc = FailureClass.with_detail(FailureClass.RESOURCE_LIMIT, "memory")
    if limit_class and limit_class.startswith("resource_limit") and fc.startswith("runtime_crash"):
        fc = limit_class
    detail = str(v.get("detail", ""))
    explanation = f"{detail}\n{log}".strip() if log.strip() else detail
    status = "error" if v["verdict"] == "error" else "fail"
    return Score(0.0, status, fc, metrics=metrics, explanation=short_log(explanation))
