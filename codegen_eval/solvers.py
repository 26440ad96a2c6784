"""Solvers: where candidates come from.

  GenerateSolver   n samples per prompt from a model through appl (one gen per sample, all in
                   flight at once; appl's per-model limits bound the real concurrency)
  ReferenceSolver  the sample's reference solution, n times: a self-check of every harness
  FileSolver       candidates someone else generated, from a JSONL file

Besides the `Solver` protocol (`solve(sample, n)`), each has `solve_one(sample, index)`: the
runner uses it to generate only the indices a resumed run still lacks and to start scoring a
candidate the moment it exists.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from appl import GenResult, SystemMessage, gen, ppl
from codegen_eval.errors import CodegenEvalError
from codegen_eval.extract import extract_code
from codegen_eval.prompts import answer_code, system_prompt
from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.types import Candidate, Sample


def sample_language(sample: Sample) -> str:
    return str(sample.metadata.get("language") or "")


@ppl
async def first_draft(
    sample: Sample,
    *,
    model: str | None,
    temperature: float,
    seed: int,
    max_tokens: int,
    system: str | None = None,
) -> GenResult:
    """One plain generation: the per-language system prompt (codegen_eval.prompts), then the
    sample's prompt. `generate` and the repair agent's first round both call this, so round 1
    of a repair chain is the same request as a generate sample with the same seed. Bare
    expression statements append to the prompt (appl's @ppl rule)."""
    SystemMessage(system if system is not None else system_prompt(sample))
    sample.input
    return await gen(
        model=model, temperature=temperature, seed=seed, max_tokens=max_tokens
    ).result()


def usage_of(result: GenResult) -> dict[str, Any]:
    """Token counts, latency and finish reason of a gen, when the response carries them."""
    out: dict[str, Any] = {}
    response = result.response
    usage = getattr(response, "usage", None)
    if usage is not None:
        out["prompt_tokens"] = int(getattr(usage, "prompt_tokens", 0) or 0)
        out["completion_tokens"] = int(getattr(usage, "completion_tokens", 0) or 0)
    for attr in ("latency_s", "finish_reason"):
        value = getattr(response, attr, None)
        if value is not None:
            out[attr] = value
    return out


class GenerateSolver:
    """k=n samples per prompt through appl. Temperature, seed and token counts are recorded in
    each Candidate's metadata; the seed of sample i is `seed + i`, so a rerun asks the same.
    The system prompt is codegen_eval.prompts.system_prompt(sample) unless one is given
    (`{lang}` in it is replaced by the sample's language)."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.8,
        max_tokens: int = 1024,
        seed: int = 0,
        system_prompt: str | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.system_prompt = system_prompt

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "solver": "generate",
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        if self.system_prompt is not None:
            out["system_prompt"] = self.system_prompt
        return out

    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        seed = self.seed + index
        system = (
            None
            if self.system_prompt is None
            else self.system_prompt.format(lang=sample_language(sample))
        )
        result = await first_draft(
            sample,
            model=self.model,
            temperature=self.temperature,
            seed=seed,
            max_tokens=self.max_tokens,
            system=system,
        )
        text = result.text or ""
        code, method = answer_code(sample, text)
        meta: dict[str, Any] = {
            "solver": "generate",
            "model": self.model,
            "temperature": self.temperature,
            "seed": seed,
            "max_tokens": self.max_tokens,
            "extraction": method,
        }
        meta.update(usage_of(result))
        return Candidate(sample.id, index, code, raw=text, metadata=meta)

    async def solve(self, sample: Sample, n: int) -> Sequence[Candidate]:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(self.solve_one(sample, i)) for i in range(n)]
        return [t.result() for t in tasks]


class ReferenceSolver:
    """Each candidate is the sample's reference solution (`Sample.target`)."""

    def describe(self) -> dict[str, Any]:
        return {"solver": "reference"}

    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        return Candidate(
            sample.id, index, sample.target, raw=sample.target, metadata={"solver": "reference"}
        )

    async def solve(self, sample: Sample, n: int) -> Sequence[Candidate]:
        return [await self.solve_one(sample, i) for i in range(n)]


class SamplesFileError(CodegenEvalError, ValueError):
    pass


def _is_run_log(path: Path) -> bool:
    """Whether the file's first line is a codegen-eval run log header."""
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    try:
        rec = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(rec, dict) and rec.get("type") == "header" and "log_version" in rec


class FileSolver:
    """Candidates from a JSONL file, one object per line:

        {"sample_id": "...", "index": 0, "code": "..."}          full code
        {"task_id": "...", "completion": "..."}                  HumanEval-style completion
        {"sample_id": "...", "raw": "model reply with ```c ...```"}  extracted here

    `sample_id` may be spelled `task_id`; `index` defaults to the order of appearance per
    sample; an optional `suite` field restricts a line to one suite. Completions are passed as
    code with metadata["completion"] = True: suites that complete a prompt (HumanEval, ParEval)
    prepend the prompt when the code does not already contain it.

    A codegen-eval run log is a samples file too: its candidates (with their metadata: model,
    tokens, a repair chain's history) are scored again by today's scorers, at no model cost.
    That is how a log is re-judged after a scorer was tightened.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._by_sample: dict[str, dict[int, dict[str, Any]]] = {}
        self._load()

    def describe(self) -> dict[str, Any]:
        return {"solver": "file", "samples": str(self.path)}

    def _load(self) -> None:
        if not self.path.exists():
            raise SamplesFileError(f"samples file not found: {self.path}")
        if _is_run_log(self.path):
            self._load_run_log()
            return
        for lineno, rec in jsonl_records(self.path, SamplesFileError):
            sid = rec.get("sample_id", rec.get("task_id")) if isinstance(rec, dict) else None
            if sid is None or not any(f in rec for f in ("code", "completion", "raw")):
                raise SamplesFileError(
                    f"{self.path}:{lineno}: need sample_id (or task_id) and one of "
                    "code / completion / raw"
                )
            slots = self._by_sample.setdefault(str(sid), {})
            index = int(rec.get("index", len(slots)))
            if index in slots:
                raise SamplesFileError(f"{self.path}:{lineno}: duplicate index {index} for {sid}")
            slots[index] = rec

    def _load_run_log(self) -> None:
        from codegen_eval.log import LogFormatError, failed_generation, read_log

        try:
            log = read_log(self.path)
        except LogFormatError as exc:
            raise SamplesFileError(str(exc)) from None
        for rec in log.candidates.values():
            if failed_generation(rec):
                continue  # no code: nothing to score again
            # the log leaves raw empty where it equals the code
            item = {**rec, "raw": rec.get("raw") or rec.get("code", "")}
            self._by_sample.setdefault(str(rec["sample_id"]), {})[int(rec["index"])] = item
        if not self._by_sample:
            raise SamplesFileError(f"{self.path}: a run log without candidates")

    @property
    def sample_ids(self) -> list[str]:
        return list(self._by_sample)

    def rename_ids(self, mapping: dict[str, str]) -> None:
        """Take the candidates of file id `old` as those of problem `new` (short ids)."""
        for old, new in mapping.items():
            if new in self._by_sample:
                raise SamplesFileError(f"{self.path}: both {old!r} and {new!r} have candidates")
            self._by_sample[new] = self._by_sample.pop(old)

    def available(self, sample_id: str) -> int:
        return len(self._by_sample.get(sample_id, {}))

    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        rec = self._by_sample.get(sample.id, {}).get(index)
        if rec is None:
            # Not an error of the candidate: the file simply has fewer samples than n.
            return Candidate(sample.id, index, "", metadata={"solver": "file", "missing": True})
        meta: dict[str, Any] = {"solver": "file", **(rec.get("metadata") or {})}
        if "code" in rec:
            code, raw = str(rec["code"]), str(rec.get("raw", rec["code"]))
        elif "completion" in rec:
            code = raw = str(rec["completion"])
            meta["completion"] = True
        else:
            raw = str(rec["raw"])
            extraction = extract_code(raw, sample_language(sample) or None)
            code = extraction.code
            meta["extraction"] = extraction.method or extraction.reason
        return Candidate(sample.id, index, code, raw=raw, metadata=meta)

    async def solve(self, sample: Sample, n: int) -> Sequence[Candidate]:
        return [await self.solve_one(sample, i) for i in range(n)]
