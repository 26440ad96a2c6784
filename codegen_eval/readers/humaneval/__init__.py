"""HumanEval-style JSONL: one problem per line with task_id, prompt, canonical_solution, test
and entry_point (the format of HumanEval, HumanEval-X and most of their translations).

Language: the line's "language" field, else the task_id prefix ("CPP/12" -> cpp, "C/3" -> c,
"Python/5" or "HumanEval/5" -> python), else the `language` argument.

The candidate's program is the prompt followed by its code (for Python a full `def` simply
redefines the prompt's docstring-only one; for C/C++ a candidate that repeats the signature
replaces the prompt's, keeping its #include lines). How it is judged: scorer.py. The test
runs in a checker process that holds no candidate code and calls the candidate's function
in another process, so the candidate cannot forge the verdict (docs/codegen-eval.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.readers._renamed import backend_keyword
from codegen_eval.readers.humaneval.scorer import HumanEvalScorer, assemble, candidate_program
from codegen_eval.types import Sample, Task

__all__ = [
    "HumanEvalFormatError",
    "HumanEvalScorer",
    "assemble",
    "candidate_program",
    "load_humaneval",
]

_PREFIX_LANG = {"cpp": "cpp", "c++": "cpp", "c": "c", "python": "python", "humaneval": "python"}


class HumanEvalFormatError(CodegenEvalError, ValueError):
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
    backend: str | None = None,
    sandbox: str | None = None,  # deprecated spelling of backend
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
                metadata={
                    "language": lang,
                    "entry_point": entry,
                    "prompt": rec["prompt"],
                    # ours, not upstream's: C/C++ answers may hold NaN (scorer.py)
                    "allow_nan": bool(rec.get("allow_nan", False)),
                },
                files={"test": str(rec["test"])},
            )
        )
    return Task(
        name=name,
        dataset=samples,
        scorer=HumanEvalScorer(backend=backend_keyword(backend, sandbox, "load_humaneval")),
        metadata={"source": str(p)},
    )
