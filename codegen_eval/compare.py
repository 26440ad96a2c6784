"""Runs side by side: `codegen-eval report A.jsonl B.jsonl` (two or more logs).

Each log is one run, one column, labelled by model and solver (plus what tells two runs with
the same model and solver apart: temperature, seed, n, the samples file, the log's name).
Rows are metrics per suite and per language/variant: problems, n, pass@k, speedup@k and
efficiency@k where the suite measures speed, and failure classes. The HTML page adds a run
table, failure classes per run, problems on which the runs disagree, and inline SVG plots
(pass@k per suite per run, outcome bars per run); it needs no script and no network.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_eval.charts import grouped_bars, outcome_bars
from codegen_eval.log import LogContents
from codegen_eval.records import ExcludedRecord, HeaderRecord, ScoreRecord
from codegen_eval.report import GroupSummary, summarize

__all__ = ["RunSummary", "load_runs", "print_comparison", "render_comparison_html"]

# Run colours avoid the green that means "pass" in the outcome bars.
RUN_COLORS = ["#4e79a7", "#f28e2b", "#b07aa1", "#76b7b2", "#9c755f", "#ff9da7", "#edc948",
              "#bab0ac"]  # fmt: skip
PASS_COLOR = "#59a14f"
_CLASS_COLORS = ["#e15759", "#f1a340", "#d4b000", "#8c564b", "#9467bd", "#17becf", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#1f77b4"]  # fmt: skip
MAX_DISAGREEMENTS = 200


@dataclass
class RunSummary:
    path: str
    header: HeaderRecord
    label: str = ""
    groups: list[GroupSummary] = field(default_factory=list)
    excluded: list[ExcludedRecord] = field(default_factory=list)
    records: list[ScoreRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # truncated, unfinished, duplicates
    status: str = "finished"  # finished | interrupted | unfinished

    def group(self, suite: str, language: str, variant: str) -> GroupSummary | None:
        for g in self.groups:
            if (g.suite, g.language, g.variant) == (suite, language, variant):
                return g
        return None


def _base_label(header: Mapping[str, Any]) -> str:
    solver = str(header.get("solver") or "?")
    model = str(header.get("model") or "")
    return f"{model} · {solver}" if model else solver


def _distinguishers(header: Mapping[str, Any], path: str) -> list[str]:
    """Short descriptions of the settings that may tell two runs apart, most telling first."""
    opts = header.get("options") or {}
    out = []
    if opts.get("rounds") is not None:
        out.append(f"R={opts['rounds']}")
    if opts.get("temperature") is not None:
        out.append(f"T={opts['temperature']}")
    if opts.get("seed") is not None:
        out.append(f"seed {opts['seed']}")
    out.append(f"n={header.get('n', '?')}")
    if opts.get("samples"):
        out.append(Path(str(opts["samples"])).name)
    if opts.get("sandbox"):
        out.append(str(opts["sandbox"]))
    out.append(Path(path).stem)
    return out


def label_runs(runs: Sequence[RunSummary]) -> None:
    """Model · solver, and for runs sharing both the first setting that differs among them
    (else the log's name, else #i)."""
    bases = [_base_label(r.header) for r in runs]
    for base in set(bases):
        same = [r for r, b in zip(runs, bases, strict=True) if b == base]
        if len(same) == 1:
            same[0].label = base
            continue
        options = [_distinguishers(r.header, r.path) for r in same]
        chosen = None
        for i in range(len(options[0])):
            values = [o[i] if i < len(o) else "" for o in options]
            if len(set(values)) == len(values):
                chosen = values
                break
        for j, r in enumerate(same):
            r.label = f"{base} ({chosen[j] if chosen else f'#{j + 1}'})"


def _run_status(contents: LogContents) -> tuple[str, list[str]]:
    notes = []
    if contents.truncated_tail:
        notes.append("the last line is cut off (a run killed mid-write); it is ignored")
    if contents.duplicates:
        notes.append(f"{contents.duplicates} candidates were scored twice; the first is used")
    if contents.skipped_newer:
        notes.append(
            f"{contents.skipped_newer} records of types this version does not know were "
            "skipped (a newer codegen-lab wrote the log; upgrade to read them)"
        )
    if not contents.ends:
        status = "unfinished"
        notes.append("no end record: the run is still going or was killed; resume it with --resume")
    elif contents.ends[-1]["interrupted"]:
        status = "interrupted"
        notes.append("the run was interrupted; resume it with --resume --log for complete results")
    else:
        status = "finished"
    return status, notes


def load_runs(
    paths: Sequence[str | os.PathLike[str]], ks: Sequence[int] | None = None
) -> tuple[list[RunSummary], list[int]]:
    """Read each log as one run. ks default to every k the logs asked for. A file that is not
    a run log (empty, no header, damaged lines) raises LogFormatError naming it."""
    from codegen_eval.log import LogFormatError, read_log

    loaded = []
    log_ks: set[int] = set()
    for p in paths:
        contents = read_log(p)
        if not contents.header:
            what = "is empty" if Path(p).stat().st_size == 0 else "has no header record"
            raise LogFormatError(f"{p} {what}: not a codegen-eval run log")
        loaded.append(contents)
        log_ks.update(int(k) for k in contents.header.get("ks") or [1])
    use_ks = sorted(ks or log_ks or {1})
    runs = []
    for p, contents in zip(paths, loaded, strict=True):
        seen: set[tuple[str, str]] = set()
        excluded: list[ExcludedRecord] = []
        for e in contents.excluded:
            if (e["suite"], e["sample_id"]) not in seen:
                seen.add((e["suite"], e["sample_id"]))
                excluded.append(e)
        status, notes = _run_status(contents)
        if not contents.scores:
            notes.append("no candidate was scored")
        records = contents.score_records
        runs.append(
            RunSummary(
                path=str(p),
                header=contents.header,
                groups=summarize(records, use_ks),
                excluded=excluded,
                records=records,
                notes=notes,
                status=status,
            )
        )
    label_runs(runs)
    return runs, use_ks


# ------------------------------------------------------------------ rows shared by both views
@dataclass
class _Row:
    suite: str
    group: str  # "(all)" or language/variant
    metric: str
    values: list[str]
    best: int | None = None  # the run with the best value (bold)
    suite_row: bool = False


def _group_keys(runs: Sequence[RunSummary]) -> list[tuple[str, str, str]]:
    keys: list[tuple[str, str, str]] = []
    for r in runs:
        for g in r.groups:
            key = (g.suite, g.language, g.variant)
            if key not in keys:
                keys.append(key)
    suites = sorted({k[0] for k in keys})
    # suite row first, then its language/variant rows in order
    return [k for s in suites for k in sorted(k for k in keys if k[0] == s)]


def _fmt(x: float | None, digits: int) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _best(values: Sequence[float | None]) -> int | None:
    numeric = [(v, i) for i, v in enumerate(values) if v is not None]
    if len(numeric) < 2:
        return None
    top = max(v for v, _ in numeric)
    winners = [i for v, i in numeric if v == top]
    return winners[0] if len(winners) == 1 else None


def _failures_text(g: GroupSummary | None, limit: int, sep: str = ", ") -> str:
    if g is None:
        return "—"
    items = sorted(g.failures.items(), key=lambda kv: (-kv[1], kv[0]))
    if not items:
        return "none"
    parts = [f"{name} {count}" for name, count in items[:limit]]
    if len(items) > limit:
        parts.append(f"+{len(items) - limit} more")
    return sep.join(parts)


def _budget_metrics(
    gs: Sequence[GroupSummary | None],
) -> list[tuple[str, list[float | None], int, bool]]:
    """Pass within c model calls per problem (equal budget: a generate run's pass@c next to a
    repair run's pass by round c), calls per problem and tokens per solved problem."""
    budgets = [g.budget if g else None for g in gs]
    if not any(b and (b.kind == "rounds" or b.max_calls > 1 or b.has_tokens) for b in budgets):
        return []
    top = max(b.max_calls for b in budgets if b)
    out: list[tuple[str, list[float | None], int, bool]] = []
    for c in range(1, top + 1):
        values = [b.pass_within.get(c) if b else None for b in budgets]
        out.append((f"pass ≤{c} call{'s' if c > 1 else ''}", values, 3, True))
    out.append(("calls/problem", [b.calls_per_problem if b else None for b in budgets], 2, False))
    out.append(("tokens/solved", [b.tokens_per_solved if b else None for b in budgets], 0, False))
    return out


def comparison_rows(
    runs: Sequence[RunSummary], ks: Sequence[int], *, failures_limit: int = 3, sep: str = ", "
) -> list[_Row]:
    rows: list[_Row] = []
    any_skipped = any(g.skipped for r in runs for g in r.groups)
    for suite, lang, var in _group_keys(runs):
        gs = [r.group(suite, lang, var) for r in runs]
        top = not lang and not var
        label = next(g.label for g in gs if g is not None)
        metrics: list[tuple[str, list[float | None], int, bool]] = []
        if top:
            metrics.append(("problems", [g.problems if g else None for g in gs], 0, False))
            metrics.append(("n", [g.candidates if g else None for g in gs], 0, False))
            if any_skipped:
                metrics.append(("skipped", [g.skipped if g else None for g in gs], 0, False))
        for k in ks:
            metrics.append((f"pass@{k}", [g.pass_at.get(k) if g else None for g in gs], 3, True))
        if any(g and g.speedup_at for g in gs):
            for k in ks:
                speed = [g.speedup_at.get(k) if g else None for g in gs]
                metrics.append((f"speedup@{k}", speed, 2, True))
            for k in ks:
                eff = [g.efficiency_at.get(k) if g else None for g in gs]
                metrics.append((f"efficiency@{k}", eff, 2, True))
        if top:
            metrics += _budget_metrics(gs)
        first = True
        for name, values, digits, rank in metrics:
            rows.append(
                _Row(
                    suite if first and top else "",
                    label if first else "",
                    name,
                    [_fmt(None if v is None else float(v), digits) for v in values],
                    _best(values) if rank else None,
                    top,
                )
            )
            first = False
        if top:
            rows.append(
                _Row(
                    "",
                    "",
                    "failures",
                    [_failures_text(g, failures_limit, sep) for g in gs],
                    None,
                    top,
                )
            )
    return rows


def _problem_mismatch(runs: Sequence[RunSummary]) -> list[str]:
    """Suites whose runs cover different problem sets: their pass@k are not comparable."""
    out = []
    for suite in sorted({g.suite for r in runs for g in r.groups}):
        sets = []
        for r in runs:
            ids = {x["sample_id"] for x in r.records if x["suite"] == suite}
            sets.append(ids)
        present = [s for s in sets if s]
        if len(present) > 1 and any(s != present[0] for s in present):
            sizes = ", ".join(str(len(s)) for s in sets)
            out.append(
                f"{suite}: the runs cover different problems ({sizes}); compare pass@k with care"
            )
    return out


def print_comparison(runs: Sequence[RunSummary], ks: Sequence[int], console: Any = None) -> None:
    """The terminal table: one column per run."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"codegen-eval: {len(runs)} runs side by side")
    table.add_column("suite / group")
    table.add_column("metric", no_wrap=True)
    for i, r in enumerate(runs):
        table.add_column(f"[{i + 1}] {r.label}".replace("[", r"\["), justify="right")
    for row in comparison_rows(runs, ks, sep="\n"):
        cells = [
            f"[bold]{v}[/bold]" if i == row.best else v.replace("[", r"\[")
            for i, v in enumerate(row.values)
        ]
        where = row.suite or (f"  {row.group}" if row.group and row.group != "(all)" else "")
        table.add_row(where, row.metric, *cells, end_section=False)
    console.print(table)
    for i, r in enumerate(runs):
        console.print(f"[{i + 1}] {r.label}: {r.path} ({r.status})", markup=False)
    for line in _problem_mismatch(runs):
        console.print(f"note: {line}", markup=False)


# -------------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f0f0f0}td.l,th.l{text-align:left}tr.suite td{background:#fafafa}
td.best{font-weight:bold}tr.first td{border-top:2px solid #999}
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;vertical-align:middle}
.meta{color:#666;font-size:.85em}.note{color:#a33}svg{margin:.5em 1em .5em 0;background:#fff}
.plots{display:flex;flex-wrap:wrap;align-items:flex-start}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _swatch(color: str) -> str:
    return f'<span class="swatch" style="background:{color}"></span>'


def _outcomes(run: RunSummary, suite: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for g in run.groups:
        if g.suite == suite and g.label == "(all)":
            out["pass"] += g.passed
            out.update(g.failures)
            if g.skipped:
                out["skipped"] += g.skipped
    return out


def _disagreements(runs: Sequence[RunSummary]) -> list[tuple[str, str, list[str]]]:
    """(suite, sample, 'passed/n' per run) for problems whose pass rates differ between runs."""
    per_run: list[dict[tuple[str, str], tuple[int, int]]] = []
    for r in runs:
        counts: dict[tuple[str, str], tuple[int, int]] = {}
        for x in r.records:
            if x.get("status") == "skipped":
                continue
            key = (x["suite"], x["sample_id"])
            passed, n = counts.get(key, (0, 0))
            counts[key] = (passed + (x.get("status") == "pass"), n + 1)
        per_run.append(counts)
    out = []
    for key in sorted(set().union(*per_run)):
        cells = [c.get(key) for c in per_run]
        rates = {p / n for p, n in (c for c in cells if c)}
        if sum(1 for c in cells if c) >= 2 and len(rates) > 1:
            out.append((key[0], key[1], [f"{c[0]}/{c[1]}" if c else "—" for c in cells]))
    return out


def render_comparison_html(
    runs: Sequence[RunSummary], ks: Sequence[int], *, title: str = "codegen-eval: runs compared"
) -> str:
    """One self-contained page (inline CSS and SVG; no scripts, no external assets)."""
    colors = [RUN_COLORS[i % len(RUN_COLORS)] for i in range(len(runs))]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        '<h2>Runs</h2><table id="runs"><thead><tr><th>#</th><th class="l">run</th>'
        '<th class="l">log</th><th class="l">suites</th><th>n</th><th class="l">started</th>'
        '<th class="l">status</th><th>scored</th></tr></thead><tbody>',
    ]
    for i, r in enumerate(runs):
        h = r.header
        out.append(
            f'<tr><td>{i + 1}</td><td class="l">{_swatch(colors[i])}{_esc(r.label)}</td>'
            f'<td class="l">{_esc(r.path)}</td><td class="l">{_esc(", ".join(h.get("suites", [])))}</td>'
            f'<td>{_esc(h.get("n", "?"))}</td><td class="l">{_esc(h.get("started", "?"))}</td>'
            f'<td class="l">{_esc(r.status)}</td><td>{len(r.records)}</td></tr>'
        )
    out.append("</tbody></table>")
    for i, r in enumerate(runs):
        for note in r.notes:
            out.append(f'<p class="meta note">[{i + 1}] {_esc(note)}</p>')
    for line in _problem_mismatch(runs):
        out.append(f'<p class="meta note">{_esc(line)}</p>')

    # results: one column per run
    out.append('<h2>Results</h2><table id="results"><thead><tr><th class="l">suite</th>')
    out.append('<th class="l">language/variant</th><th class="l">metric</th>')
    out += [
        f'<th class="l">{_swatch(colors[i])}[{i + 1}] {_esc(r.label)}</th>'
        for i, r in enumerate(runs)
    ]
    out.append("</tr></thead><tbody>")
    for row in comparison_rows(runs, ks, failures_limit=8):
        classes = [c for c, on in (("suite", row.suite_row), ("first", bool(row.group))) if on]
        attr = f' class="{" ".join(classes)}"' if classes else ""
        cells = [
            f'<td class="l">{_esc(row.suite)}</td><td class="l">{_esc(row.group)}</td>',
            f'<td class="l">{_esc(row.metric)}</td>',
        ]
        for i, v in enumerate(row.values):
            kind = "best" if i == row.best else ("l" if row.metric == "failures" else "")
            cells.append(f'<td class="{kind}">{_esc(v)}</td>' if kind else f"<td>{_esc(v)}</td>")
        out.append(f"<tr{attr}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")

    # plots
    out.append('<h2>Plots</h2><div class="plots">')
    series = [(f"[{i + 1}] {r.label}", colors[i]) for i, r in enumerate(runs)]
    keys = _group_keys(runs)
    names = [
        f"{suite} {'/'.join(p for p in (lang, var) if p) or '(all)'}" for suite, lang, var in keys
    ]
    for k in ks:
        values = [
            [(g.pass_at.get(k) if (g := r.group(*key)) else None) for r in runs] for key in keys
        ]
        out.append(
            grouped_bars(
                f"pass@{k} per suite and language/variant", names, series, values, vmax=1.0
            )
        )
    speed_keys = [key for key in keys if any((g := r.group(*key)) and g.speedup_at for r in runs)]
    if speed_keys:
        k = ks[0]
        values = [
            [(g.speedup_at.get(k) if (g := r.group(*key)) else None) for r in runs]
            for key in speed_keys
        ]
        speed_names = [names[keys.index(key)] for key in speed_keys]
        out.append(
            grouped_bars(
                f"speedup@{k} (failed candidates count 0)", speed_names, series, values, digits=2
            )
        )
    suites = sorted({g.suite for r in runs for g in r.groups})
    totals: Counter[str] = Counter()
    bar_rows = []
    for suite in suites:
        for i, r in enumerate(runs):
            counts = _outcomes(r, suite)
            if counts:
                totals.update(counts)
                bar_rows.append((f"{suite} [{i + 1}]", colors[i], counts))
    class_colors = {"pass": PASS_COLOR}
    failure_classes = [c for c, _ in totals.most_common() if c != "pass"]
    for j, c in enumerate(failure_classes):
        class_colors[c] = "#bbbbbb" if c == "skipped" else _CLASS_COLORS[j % len(_CLASS_COLORS)]
    out.append(outcome_bars("outcomes per run (share of candidates)", bar_rows, class_colors))
    out.append("</div>")

    # failure classes: per (suite, class, detail), a count per run
    out.append('<h2>Failure classes</h2><table id="failures"><thead><tr><th class="l">suite</th>')
    out.append('<th class="l">class</th><th class="l">detail</th>')
    out += [f"<th>[{i + 1}]</th>" for i in range(len(runs))]
    out.append("</tr></thead><tbody>")
    any_failure = False
    for suite in suites:
        table: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(runs):
            for g in r.groups:
                if g.suite == suite and g.label == "(all)":
                    for cls, details in g.failure_details.items():
                        for detail, count in details.items():
                            table.setdefault((cls, detail), [0] * len(runs))[i] += count
        for (cls, detail), counts in sorted(table.items()):
            any_failure = True
            out.append(
                f'<tr><td class="l">{_esc(suite)}</td><td class="l">{_esc(cls)}</td>'
                f'<td class="l">{_esc(detail or "—")}</td>'
                + "".join(f"<td>{c}</td>" for c in counts)
                + "</tr>"
            )
    out.append("</tbody></table>")
    if not any_failure:
        out.append('<p id="no-failures">No candidate failed in any run.</p>')

    # problems the runs disagree on
    rows = _disagreements(runs)
    out.append(f"<h2>Problems the runs disagree on ({len(rows)})</h2>")
    out.append('<table id="disagreements"><thead><tr><th class="l">suite</th>')
    out.append('<th class="l">problem</th>')
    out += [f"<th>[{i + 1}] passed</th>" for i in range(len(runs))]
    out.append("</tr></thead><tbody>")
    for suite, sample, cells in rows[:MAX_DISAGREEMENTS]:
        out.append(
            f'<tr><td class="l">{_esc(suite)}</td><td class="l">{_esc(sample)}</td>'
            + "".join(f"<td>{_esc(c)}</td>" for c in cells)
            + "</tr>"
        )
    out.append("</tbody></table>")
    if len(rows) > MAX_DISAGREEMENTS:
        out.append(f'<p class="meta">first {MAX_DISAGREEMENTS} of {len(rows)} shown</p>')

    excluded: dict[tuple[str, str], tuple[str, list[bool]]] = {}
    for i, r in enumerate(runs):
        for e in r.excluded:
            key = (e["suite"], e["sample_id"])
            reason, marks = excluded.setdefault(key, (e["reason"], [False] * len(runs)))
            marks[i] = True
    if excluded:
        out.append('<h2>Excluded problems</h2><table id="excluded"><thead><tr>')
        out.append('<th class="l">suite</th><th class="l">problem</th><th class="l">reason</th>')
        out += [f"<th>[{i + 1}]</th>" for i in range(len(runs))]
        out.append("</tr></thead><tbody>")
        for (suite, sample), (reason, marks) in sorted(excluded.items()):
            out.append(
                f'<tr><td class="l">{_esc(suite)}</td><td class="l">{_esc(sample)}</td>'
                f'<td class="l">{_esc(reason)}</td>'
                + "".join(f"<td>{'✓' if m else ''}</td>" for m in marks)
                + "</tr>"
            )
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out)
