"""HumanEval-style JSONL: one problem per line with task_id, prompt, canonical_solution, test
and entry_point (the format of HumanEval, HumanEval-X and most of their translations).

Language: the line's "language" field, else the task_id prefix ("CPP/12" -> cpp, "C/3" -> c,
"Python/5" or "HumanEval/5" -> python), else the `language` argument.

Scoring, always inside the sandbox:
  python  program = prompt + candidate + test + "check(entry_point)", run with python3.
          Works for both a completion (the body) and a full function: after the prompt's
          docstring-only definition, a full `def` simply redefines it.
  c, cpp  program = prompt + candidate + test (the test holds main()), compiled with gcc/g++
          and run. A candidate that repeats the signature replaces the prompt's signature
          (C does not allow a second definition); the prompt's #include lines are kept.
Exit 0 passes. An assertion failure is wrong_answer; other failures use `failures.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Task

_PREFIX_LANG = {"cpp": "cpp", "c++": "cpp", "c": "c", "python": "python", "humaneval": "python"}
_ASSERT = re.compile(r"AssertionError|Assertion .* failed|assert.*failed", re.IGNORECASE)


class HumanEvalFormatError(ValueError):
    pass


def _language_of(rec: dict[str, Any], default: str | None) -> str:
    if rec.get("language"):
        return _PREFIX_LANG.get(str(rec["language"]).lower(), str(rec["language"]).lower())
    prefix = str(rec["task_id"]).split("/", 1)[0].lower()
    if prefix in _PREFIX_LANG:
        return _PREFIX_LANG[prefix]
    if default:
        return default
    raise HumanEvalFormatError(
        f"cannot tell the language of {rec['task_id']!r}; pass language=python|c|cpp"
    )


def load_humaneval(
    path: str | os.PathLike[str],
    *,
    name: str = "humaneval",
    language: str | None = None,
    sandbox: str | None = None,
) -> Task:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"HumanEval-style file not found: {p}")
    samples: list[Sample] = []
    for lineno, rec in jsonl_records(p, HumanEvalFormatError):
        missing = [f for f in ("task_id", "prompt", "test") if f not in rec]
        if missing:
            raise HumanEvalFormatError(f"{p}:{lineno}: missing field(s) {', '.join(missing)}")
        lang = _language_of(rec, language)
        entry = str(rec.get("entry_point", ""))
        if lang == "python" and not entry:
            raise HumanEvalFormatError(f"{p}:{lineno}: python problems need entry_point")
        samples.append(
            Sample(
                id=str(rec["task_id"]),
                input=str(rec["prompt"]),
                target=str(rec.get("canonical_solution", "")),
                metadata={"language": lang, "entry_point": entry, "prompt": rec["prompt"]},
                files={"test": str(rec["test"])},
            )
        )
    return Task(
        name=name,
        dataset=samples,
        scorer=HumanEvalScorer(sandbox=sandbox),
        metadata={"source": str(p)},
    )


def _defines(code: str, entry: str) -> bool:
    return (
        bool(entry)
        and re.search(rf"\b{re.escape(entry)}\s*\([^;{{]*\)\s*(const\s*)?\{{", code) is not None
    )


def assemble(sample: Sample, code: str) -> str:
    lang = sample.metadata.get("language", "python")
    prompt = str(sample.metadata.get("prompt", sample.input))
    entry = str(sample.metadata.get("entry_point", ""))
    test = sample.files.get("test", "")
    if lang == "python":
        return f"{prompt}{code}\n\n{test}\n\ncheck({entry})\n"
    if _defines(code, entry):
        keep = [ln for ln in prompt.splitlines() if ln.lstrip().startswith(("#include", "using "))]
        return "\n".join(keep) + f"\n{code}\n{test}\n"
    return f"{prompt}{code}\n{test}\n"


class HumanEvalScorer:
    def __init__(self, *, sandbox: str | None = None, wall_s: float = 10.0) -> None:
        self.sandbox = sandbox
        self.wall_s = wall_s

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        from sandboxes import Limits, open_sandbox

        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="no code in the reply")
        lang = sample.metadata.get("language", "python")
        program = assemble(sample, candidate.code)
        run_limits = Limits(wall_s=self.wall_s, memory_mb=512)
        async with open_sandbox(self.sandbox) as sb:
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
            src, cc, std = (
                ("main.c", "gcc", "-std=gnu11")
                if lang == "c"
                else ("main.cpp", "g++", "-std=c++17")
            )
            c = await sb.exec(
                [cc, std, "-O2", "-o", "prog", src, "-lm"],
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
