"""Logs both ways between Inspect AI and codegen-eval.

* `.eval` -> run log: an Inspect log of one of our tasks (`inspect eval codegen_eval/...`) read
  as the records of a `codegen-eval run` log (header, candidate, score, excluded, end), so
  `codegen-eval report` and `show` read it as they read our JSONL. Each epoch is a candidate
  index (epoch e = index e - 1); the verdicts are those our scorer put in the scores'
  metadata, not recomputed.
* run log -> `.eval`: `codegen-eval export LOG.jsonl --inspect OUT.eval` writes one Inspect
  log per suite of the run (`inspect view` shows them), with the same score metadata, so
  reading it back gives the same table.

Needs `inspect-ai` (the `inspect` extra); imported only by those commands.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from codegen_eval.log import LOG_VERSION, LogContents, LogFormatError, read_log
from codegen_eval.records import (
    CandidateRecord,
    EndRecord,
    ExcludedRecord,
    HeaderRecord,
    Record,
    ScoreRecord,
    to_json,
)

PACKAGE = "codegen_eval"
SCORER = "codegen_verdict"  # codegen_eval.inspect_tasks.scorer.SCORER_NAME
CANDIDATE_KEY = "codegen_eval:candidate"  # codegen_eval.inspect_tasks.solvers.CANDIDATE_KEY


def is_eval_log(path: str | Path) -> bool:
    return Path(path).suffix == ".eval"


# ------------------------------------------------------------------ .eval -> records


def _read(path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    if not path.exists():
        raise FileNotFoundError(f"no such Inspect log: {path}")
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # a zip that is not a log, a damaged file
        raise LogFormatError(f"{path}: not a readable Inspect .eval log ({exc})") from None


def _ours(score: Any) -> bool:
    return isinstance(getattr(score, "metadata", None), dict) and "status" in score.metadata


def eval_log_records(path: str | Path) -> list[Record]:
    """The run-log records of an Inspect log of a codegen_eval task."""
    p = Path(path)
    log = _read(p)
    spec = log.eval
    info = (spec.metadata or {}).get(PACKAGE) or {}
    suite = str(info.get("suite") or spec.task.split("/")[-1])
    samples = list(log.samples or [])
    if not info and not any(_ours(s.scores.get(SCORER)) for s in samples if s.scores):
        raise LogFormatError(
            f"{p}: not the log of a codegen_eval task (task {spec.task!r} has no {SCORER} scores)"
        )
    epochs = int(spec.config.epochs or 1)
    ks = [k for k in info.get("ks") or [1] if k <= epochs] or [1]
    header: dict[str, Any] = {
        "type": "header",
        "log_version": LOG_VERSION,
        "started": spec.created,
        "suites": [suite],
        "n": epochs,
        "ks": ks,
        "model": "" if spec.model == "none/none" else spec.model,
        "solver": info.get("solver", ""),
        "options": {
            "solver": info.get("solver", ""),
            "filter": info.get("filter"),
            "limit": info.get("limit"),
            "sandbox": info.get("backend"),
        },
        "inspect": {"log": str(p), "task": spec.task, "eval_id": spec.eval_id},
    }
    if info.get("log_header"):
        header["suite_notes"] = {suite: info["log_header"]}
    out: list[Record] = [cast(HeaderRecord, header)]  # with an "inspect" key of its own
    for sample in samples:
        out.extend(_sample_records(suite, sample))
    if info.get("limit") is None:
        for sample_id, reason in (info.get("excluded") or {}).items():
            out.append(
                ExcludedRecord(type="excluded", suite=suite, sample_id=sample_id, reason=reason)
            )
    out.append(EndRecord(type="end", interrupted=log.status != "success", scored=len(samples)))
    return out


def _sample_records(suite: str, sample: Any) -> list[Record]:
    score = (sample.scores or {}).get(SCORER)
    stored = (sample.store or {}).get(CANDIDATE_KEY) or {}
    sid, index = str(sample.id), int(sample.epoch) - 1
    md = dict(getattr(score, "metadata", None) or {})
    if score is None or md.get("status") in (None, "missing"):
        return []  # an errored sample, or an epoch the samples file had no candidate for
    meta = dict(stored.get("metadata") or {})
    code = str(stored.get("code", score.answer or ""))
    sample_md = sample.metadata or {}
    candidate = CandidateRecord(
        type="candidate",
        suite=suite,
        sample_id=sid,
        index=index,
        code=code,
        raw="" if stored.get("raw", code) == code else str(stored.get("raw")),
        metadata=meta,
    )
    record = ScoreRecord(
        type="score",
        suite=suite,
        sample_id=sid,
        index=index,
        code_hash=md.get("code_hash", ""),
        value=float(md.get("value", 0.0)),
        status=md["status"],
        failure_class=md.get("failure_class"),
        metrics=md.get("metrics") or {},
        explanation=score.explanation or "",
        language=str(sample_md.get("language", "")),
        variant=str(sample_md.get("variant", "")),
        cached=bool(md.get("cached", False)),
        candidate=meta,
    )
    return [candidate, record]


def eval_to_jsonl(path: str | Path, out: str | Path) -> Path:
    """Write the run-log view of an Inspect log to `out` (JSONL)."""
    target = Path(out)
    with target.open("w", encoding="utf-8") as fh:
        for rec in eval_log_records(path):
            fh.write(to_json(rec) + "\n")
    return target


@contextmanager
def readable_logs(paths: Sequence[str]) -> Iterator[list[str]]:
    """`paths` with every `.eval` log replaced by its run-log view in a temporary directory
    (named after it), for the commands that read run logs."""
    if not any(is_eval_log(p) for p in paths):
        yield list(paths)
        return
    with tempfile.TemporaryDirectory(prefix="codegen-eval-inspect-") as tmp:
        out = []
        for i, p in enumerate(paths):
            if is_eval_log(p):
                own = Path(tmp) / str(i)  # one directory each: the run keeps the log's name
                own.mkdir()
                out.append(str(eval_to_jsonl(p, own / f"{Path(p).stem}.jsonl")))
            else:
                out.append(p)
        yield out


# ------------------------------------------------------------------ run log -> .eval


def export_eval(log_path: str | Path, out: str | Path) -> list[Path]:
    """Write run log `log_path` as Inspect log(s): `out` for a one-suite run, else
    `<out stem>-<suite>.eval` per suite. Returns the paths written."""
    from inspect_ai.log import write_eval_log

    contents = read_log(log_path)
    if not contents.header:
        raise LogFormatError(f"{log_path}: an empty run log (nothing to export)")
    target = Path(out)
    if target.suffix != ".eval":
        raise ValueError(f"--inspect {target}: the output must end in .eval")
    suites = list(dict.fromkeys(r["suite"] for r in contents.score_records))
    suites = suites or list(contents.header.get("suites") or [])
    written = []
    for suite in suites:
        path = target if len(suites) == 1 else target.with_name(f"{target.stem}-{suite}.eval")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_eval_log(_eval_log(contents, suite, Path(log_path)), str(path))
        written.append(path)
    return written


def _eval_log(contents: LogContents, suite: str, source: Path) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    header = contents.header
    records = [r for r in contents.score_records if r["suite"] == suite]
    candidates = contents.candidates
    n = int(header.get("n") or 1)
    ks = [int(k) for k in header.get("ks") or [1]]
    model = str(header.get("model") or "")
    ids = list(dict.fromkeys(str(r["sample_id"]) for r in records))
    excluded = {e["sample_id"]: e["reason"] for e in contents.excluded if e["suite"] == suite}
    options = header.get("options") or {}
    spec = EvalSpec(
        created=str(header.get("started") or ""),
        task=f"{PACKAGE}/{suite}",
        dataset=EvalDataset(name=suite, samples=len(ids), sample_ids=ids),  # type: ignore[arg-type]
        model=f"appl/{model}" if model else "none/none",
        config=EvalConfig(epochs=n),
        metadata={
            PACKAGE: {
                "suite": suite,
                "solver": header.get("solver", ""),
                "ks": ks,
                "filter": options.get("filter"),
                "limit": options.get("limit"),
                "backend": options.get("sandbox"),
                "excluded": excluded,
                "log_header": (header.get("suite_notes") or {}).get(suite),
                "source_log": str(source),
            }
        },
    )
    samples = [_eval_sample(r, candidates, model) for r in records]
    interrupted = any(e["interrupted"] for e in contents.ends[-1:]) or not contents.ends
    return EvalLog(
        status="cancelled" if interrupted else "success",
        eval=spec,
        results=_results(records, ks, len(ids)),
        stats=EvalStats(
            started_at=str(header.get("started") or ""),
            completed_at=str(header.get("started") or ""),
        ),
        samples=samples,
    )


def _eval_sample(rec: ScoreRecord, candidates: dict[str, CandidateRecord], model: str) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ModelOutput

    from codegen_eval.log import score_key

    cand = candidates.get(score_key(rec["suite"], rec["sample_id"], rec["index"]))
    code = cand["code"] if cand else ""
    raw = (cand["raw"] if cand else "") or code
    meta = dict((cand["metadata"] if cand else None) or rec.get("candidate") or {})
    return EvalSample(
        id=str(rec["sample_id"]),
        epoch=int(rec["index"]) + 1,
        input=str(rec["sample_id"]),  # the run log keeps no prompt
        target="",
        messages=[ChatMessageAssistant(content=raw)] if raw else [],
        output=ModelOutput.from_content(model=model or "none", content=raw),
        scores={SCORER: _score_of(rec, code)},
        metadata={"language": rec["language"], "variant": rec["variant"]},
        store={CANDIDATE_KEY: {"index": rec["index"], "code": code, "raw": raw, "metadata": meta}},
    )


def _score_of(rec: ScoreRecord, code: str) -> Any:
    from inspect_ai.scorer import CORRECT, INCORRECT, Score

    metadata = {
        "status": rec["status"],
        "failure_class": rec["failure_class"],
        "value": rec["value"],
        "metrics": rec["metrics"],
        "cached": rec["cached"],
        "code_hash": rec["code_hash"],
    }
    explanation = rec["explanation"]
    if rec["status"] == "skipped":
        return Score.unscored(reason=rec["failure_class"] or "skipped", answer=code,
                              explanation=explanation, metadata=metadata)  # fmt: skip
    value = CORRECT if rec["status"] == "pass" else INCORRECT
    return Score(value=value, answer=code, explanation=explanation, metadata=metadata)


def _results(records: list[ScoreRecord], ks: list[int], problems: int) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    from codegen_eval.report import summarize_group

    judged = [r for r in records if r["status"] != "skipped"]
    accuracy = sum(r["status"] == "pass" for r in judged) / len(judged) if judged else 0.0
    group = summarize_group("export", records, ks)
    ours: dict[str, EvalMetric] = {}
    for k in ks:
        for name, table in (("pass", group.pass_at), ("speedup", group.speedup_at),
                            ("efficiency", group.efficiency_at)):  # fmt: skip
            value = table.get(k)
            if value is not None and not math.isnan(value):
                ours[f"{name}@{k}"] = EvalMetric(name=f"{name}@{k}", value=float(value))
    return EvalResults(
        total_samples=problems,
        completed_samples=problems,
        scores=[
            EvalScore(
                name=SCORER,
                scorer=SCORER,
                metrics={"accuracy": EvalMetric(name="accuracy", value=accuracy), **ours},
            )
        ],
    )


# ------------------------------------------------------------------ the CLI's part


@contextmanager
def reading_eval_logs(args: Any) -> Iterator[None]:
    """For `report` and `show`: the `.eval` logs among `args.logs` / `args.log` are read as
    run logs for the length of the command."""
    names = [n for n in ("logs", "log") if hasattr(args, n)]
    given = {n: getattr(args, n) for n in names}
    paths = [p for n in names for p in (given[n] if isinstance(given[n], list) else [given[n]])]
    if not any(is_eval_log(p) for p in paths):
        yield
        return
    _need_inspect()
    with readable_logs(paths) as readable:
        it = iter(readable)
        for n in names:
            value = given[n]
            setattr(args, n, [next(it) for _ in value] if isinstance(value, list) else next(it))
        try:
            yield
        finally:
            for n in names:
                setattr(args, n, given[n])


def _need_inspect() -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise ValueError(
            "reading or writing Inspect .eval logs needs inspect-ai: pip install '.[inspect]'"
        ) from None


def cmd_export_inspect(args: Any) -> int:
    """`codegen-eval export LOG --inspect OUT.eval [--parquet OUT]`."""
    if not args.inspect and not args.parquet:
        raise ValueError("export needs --parquet OUT or --inspect OUT.eval (or both)")
    if args.parquet:
        from codegen_eval.hf import export_parquet

        print(f"parquet: {export_parquet(args.log, args.parquet)}")
    if args.inspect:
        _need_inspect()
        for path in export_eval(args.log, args.inspect):
            print(f"inspect log: {path}")
    return 0
