"""Summaries of score records: the terminal table and the self-contained HTML report.

Grouping: one row per suite, then one per (suite, language, variant). Per group:
  problems   distinct samples; n = candidates scored (skipped ones are not counted)
  pass@k     mean unbiased pass@k over problems with at least k candidates
  speedup@k  expected best-of-k speedup (failed candidates count 0), when the suite reports
             metrics["speedup"]; efficiency@k likewise from metrics["speedup"] / resources
             (metrics "resources", "threads", "ranks" or "np", first found)
  failures   counts by failure class
  ParEval speedup_n@k / efficiency_n@k
             upstream's own formulas (metrics.pareval_speedup_at_k), when the records carry
             metrics "runtime_s" and "best_sequential_s" (the ParEval reader's): over passing
             samples only (see metrics.pareval_speedup_at_k); shown next to ours
"""

from __future__ import annotations

import html
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codegen_eval.budget import Budget, budget_html, budget_of, print_budget_table
from codegen_eval.metrics import (
    failure_table,
    failure_totals,
    mean_efficiency_at_k,
    mean_pass_at_k,
    mean_speedup_at_k,
    pareval_efficiency_at_k,
    pareval_speedup_at_k,
)
from codegen_eval.records import ExcludedRecord, HeaderRecord, ScoreRecord
from codegen_eval.report_samples import samples_html

_RESOURCE_KEYS = ("resources", "threads", "ranks", "np")


@dataclass
class GroupSummary:
    suite: str
    language: str = ""  # "" for the suite's overall row
    variant: str = ""
    problems: int = 0
    candidates: int = 0
    passed: int = 0
    skipped: int = 0
    pass_at: dict[int, float | None] = field(default_factory=dict)
    speedup_at: dict[int, float | None] = field(default_factory=dict)
    efficiency_at: dict[int, float | None] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    failure_details: dict[str, Counter[str]] = field(default_factory=dict)
    speedups: list[float] = field(default_factory=list)  # of passing candidates, for plots
    # ParEval's published formulas (upstream-comparable), when the suite reports its timings
    upstream_speedup_at: dict[int, float | None] = field(default_factory=dict)
    upstream_efficiency_at: dict[int, float | None] = field(default_factory=dict)
    budget: Budget | None = None  # pass by model-call budget, tokens per solved problem

    @property
    def label(self) -> str:
        parts = [p for p in (self.language, self.variant) if p]
        return "/".join(parts) if parts else "(all)"


def _resources(metrics: dict[str, Any]) -> float:
    for key in _RESOURCE_KEYS:
        if key in metrics:
            return float(metrics[key])
    return 1.0


def summarize_group(
    suite: str,
    records: Sequence[Mapping[str, Any]],
    ks: Sequence[int],
    language: str = "",
    variant: str = "",
) -> GroupSummary:
    g = GroupSummary(suite, language, variant)
    per_problem: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("status") == "skipped":
            g.skipped += 1
            continue
        per_problem[r["sample_id"]].append(r)
    g.problems = len(per_problem)
    g.candidates = sum(len(v) for v in per_problem.values())
    g.passed = sum(1 for v in per_problem.values() for r in v if r.get("status") == "pass")
    counts = [(len(v), sum(r.get("status") == "pass" for r in v)) for v in per_problem.values()]
    has_speedup = any(
        "speedup" in (r.get("metrics") or {}) for v in per_problem.values() for r in v
    )
    speed_lists: list[list[float | None]] = []
    eff_lists: list[tuple[list[float | None], list[float]]] = []
    for v in per_problem.values():
        s = [
            float(r["metrics"]["speedup"])
            if r.get("status") == "pass" and "speedup" in (r.get("metrics") or {})
            else None
            for r in v
        ]
        speed_lists.append(s)
        eff_lists.append((s, [_resources(r.get("metrics") or {}) for r in v]))
        g.speedups.extend(x for x in s if x is not None)
    for k in ks:
        g.pass_at[k] = mean_pass_at_k(counts, k)
        if has_speedup:
            g.speedup_at[k] = mean_speedup_at_k(speed_lists, k)
            g.efficiency_at[k] = mean_efficiency_at_k(eff_lists, k)
    _upstream_speedups(g, per_problem, ks)
    table = failure_table(r.get("failure_class") for v in per_problem.values() for r in v)
    g.failure_details = table
    g.failures = failure_totals(table)
    g.budget = budget_of(records)
    return g


def _upstream_speedups(
    g: GroupSummary, per_problem: dict[str, list[Mapping[str, Any]]], ks: Sequence[int]
) -> None:
    """ParEval's speedup_n@k / efficiency_n@k: per problem over its passing samples (baseline:
    their fastest BestSequential), then the mean over problems with at least one pass."""
    timed = [
        [
            r["metrics"]
            for r in v
            if r.get("status") == "pass" and "best_sequential_s" in (r.get("metrics") or {})
        ]
        for v in per_problem.values()
    ]
    if not any(timed):
        return
    for k in ks:
        speed, eff = [], []
        for ms in timed:
            if not ms:
                continue  # upstream drops problems without a passing sample from the mean
            runtimes = [float(m["runtime_s"]) for m in ms]
            baseline = min(float(m["best_sequential_s"]) for m in ms)
            speed.append(pareval_speedup_at_k(runtimes, baseline, k))
            eff.append(pareval_efficiency_at_k(runtimes, baseline, _resources(ms[0]), k))
        g.upstream_speedup_at[k] = sum(speed) / len(speed) if speed else None
        g.upstream_efficiency_at[k] = sum(eff) / len(eff) if eff else None


def summarize(records: Iterable[Mapping[str, Any]], ks: Sequence[int]) -> list[GroupSummary]:
    """Suite rows, each followed by its (language, variant) rows when there is more than one
    or they are named."""
    by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by_suite[r["suite"]].append(r)
    out: list[GroupSummary] = []
    for suite in sorted(by_suite):
        recs = by_suite[suite]
        out.append(summarize_group(suite, recs, ks))
        by_lv: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
        for r in recs:
            by_lv[(r.get("language") or "", r.get("variant") or "")].append(r)
        if len(by_lv) > 1 or any(lang or var for lang, var in by_lv):
            for (lang, var), sub in sorted(by_lv.items()):
                out.append(summarize_group(suite, sub, ks, lang, var))
    return out


def note_text(note: Any) -> str:
    """A suite's log-header note as one line (ParEval: verdict mode and core cap)."""
    if not isinstance(note, dict):
        return str(note)
    parts = []
    if "verdict_label" in note:
        parts.append(f"verdict: {note['verdict_label']}")
    if "cores_cap" in note:
        parts.append(f"launch sweep capped at {note['cores_cap']} cores")
    for model, plan in (note.get("launch") or {}).items():
        if isinstance(plan, dict):
            parts.append(f"{model}: {', '.join(plan.get('run', []))}")
    return "; ".join(parts) or str(note)


def denominators(
    summary: Sequence[GroupSummary], excluded: Sequence[Mapping[str, Any]], ks: Sequence[int]
) -> list[dict[str, Any]]:
    """For each suite with excluded problems, pass@k over the problems scored here and over
    all problems (upstream-comparable: an excluded problem counts as a failure, as published
    tables count a problem whose reference does not work)."""
    counts = Counter(e["suite"] for e in excluded)
    rows = []
    for g in summary:
        if g.label != "(all)" or not counts.get(g.suite):
            continue
        total = g.problems + counts[g.suite]
        rows.append(
            {
                "suite": g.suite,
                "scored": g.problems,
                "excluded": counts[g.suite],
                "total": total,
                "here": {k: g.pass_at.get(k) for k in ks},
                "comparable": {
                    k: (None if g.pass_at.get(k) is None else g.pass_at[k] * g.problems / total)
                    for k in ks
                },
            }
        )
    return rows


def denominator_lines(rows: Sequence[dict[str, Any]], ks: Sequence[int]) -> list[str]:
    out = []
    for r in rows:
        here = ", ".join(f"pass@{k} {_fmt(r['here'][k])}" for k in ks)
        comp = ", ".join(f"pass@{k} {_fmt(r['comparable'][k])}" for k in ks)
        out.append(
            f"{r['suite']}: {here} over {plural(r['scored'], 'problem')} scorable here; "
            f"{comp} over "
            f"all {r['total']} (upstream-comparable: {r['excluded']} excluded count as failures)"
        )
    return out


def plural(n: int, noun: str) -> str:
    """ "1 problem", "3 problems"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _failures_text(g: GroupSummary, limit: int = 4) -> str:
    items = sorted(g.failures.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{name} {count}" for name, count in items[:limit])
    return text + (f", +{len(items) - limit} more" if len(items) > limit else "")


def print_table(
    summary: Sequence[GroupSummary],
    ks: Sequence[int],
    excluded: Sequence[Mapping[str, Any]] = (),
    console: Any = None,
) -> None:
    """The final rich table (stdout unless a console is given)."""
    from rich.console import Console
    from rich.table import Table

    # Not a terminal (a pipe, a CI log): rich would wrap the table at 80 columns, unreadable
    # once the speedup columns are there.
    console = console or Console(width=None if sys.stdout.isatty() else 200)
    any_speed = any(g.speedup_at for g in summary)
    # Skipped candidates (e.g. CUDA runs with no GPU) are not in n or pass@k; show them so a
    # row of zeros never reads as "nothing was there".
    any_skipped = any(g.skipped for g in summary)
    table = Table(title="codegen-eval results", show_lines=False)
    table.add_column("suite")
    table.add_column("language/variant")
    table.add_column("problems", justify="right")
    # every candidate scored in the group (problems x samples), not -n (samples per problem)
    table.add_column("candidates", justify="right")
    if any_skipped:
        table.add_column("skipped", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    any_upstream = any(g.upstream_speedup_at for g in summary)
    if any_speed:
        for k in ks:
            table.add_column(f"speedup@{k}", justify="right")
            if any_upstream:
                table.add_column(f"efficiency@{k}", justify="right")
    if any_upstream:
        for k in ks:
            table.add_column(f"ParEval speedup_n@{k}", justify="right")
            table.add_column(f"ParEval efficiency_n@{k}", justify="right")
    table.add_column("failures")
    for g in summary:
        row = [
            g.suite if not g.language and not g.variant else "",
            g.label,
            str(g.problems),
            str(g.candidates),
        ]
        if any_skipped:
            row.append(str(g.skipped) if g.skipped else "")
        row += [_fmt(g.pass_at.get(k)) for k in ks]
        if any_speed:
            for k in ks:
                row.append(_fmt(g.speedup_at.get(k), 2))
                if any_upstream:
                    row.append(_fmt(g.efficiency_at.get(k), 2))
        if any_upstream:
            for k in ks:
                row += [
                    _fmt(g.upstream_speedup_at.get(k), 2),
                    _fmt(g.upstream_efficiency_at.get(k), 2),
                ]
        row.append(_failures_text(g))
        table.add_row(*row, style="bold" if g.label == "(all)" else None)
    console.print(table)
    if any_speed:
        console.print(
            "speedup@k / efficiency@k: expected BEST of k samples, failed samples count 0 "
            "(codegen-lab's estimator)"
        )
    if any_upstream:
        console.print(
            "ParEval speedup_n@k / efficiency_n@k: ParEval's analysis/metrics.py formula at the "
            "largest launch config run (passing samples only; its nCr quirk makes k > 1 "
            "neither best nor worst of k), for comparison with published tables"
        )
    print_budget_table(summary, console)
    if excluded:
        for line in denominator_lines(denominators(summary, excluded, ks), ks):
            console.print(line, highlight=False)
        console.print(f"excluded problems: {len(excluded)}", highlight=False)
        for e in excluded[:20]:
            console.print(f"  {e['suite']}/{e['sample_id']}: {e['reason']}", highlight=False)


# ------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}tr.suite td{font-weight:bold;background:#fafafa}
.meta{color:#666;font-size:.85em}svg{margin:.5em 1em .5em 0;background:#fff}
.plots{display:flex;flex-wrap:wrap}
td.id{white-space:nowrap}details.sample summary{cursor:pointer;font-family:monospace}
summary.pass{color:#2a7a2a}summary.fail,summary.error{color:#b22}
details.sample pre{background:#f7f7f7;padding:6px;max-height:30em;overflow:auto;
white-space:pre-wrap}
"""
_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _bar_chart(
    title: str,
    items: Sequence[tuple[str, float]],
    vmax: float | None = None,
    *,
    one_color: bool = False,
) -> str:
    """A horizontal bar chart as inline SVG: a colour per category, or one colour for the bins
    of a histogram (where a colour per bar would suggest categories that are not there)."""
    if not items:
        return ""
    vmax = vmax or max((v for _, v in items), default=1.0) or 1.0
    row_h, label_w, bar_w = 20, 220, 300
    h = 30 + row_h * len(items)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 70}" height="{h}" '
        f'role="img" aria-label="{_esc(title)}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{_esc(title)}</text>',
    ]
    for i, (label, value) in enumerate(items):
        y = 26 + i * row_h
        w = max(0.0, min(1.0, value / vmax)) * bar_w
        color = _COLORS[0 if one_color else i % len(_COLORS)]
        parts.append(f'<text x="4" y="{y + 13}" font-size="11">{_esc(label[:34])}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{row_h - 5}" fill="{color}"/>'
        )
        parts.append(
            f'<text x="{label_w + w + 4:.1f}" y="{y + 13}" font-size="11">{value:.3g}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram(title: str, values: Sequence[float], bins: int = 10) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    width = (hi - lo) / bins or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / width))] += 1
    items = [
        (f"{lo + i * width:.2f}–{lo + (i + 1) * width:.2f}", float(c)) for i, c in enumerate(counts)
    ]
    med = statistics.median(values)
    return _bar_chart(f"{title} (median {med:.2f}, n={len(values)})", items, one_color=True)


def render_html(
    summary: Sequence[GroupSummary],
    ks: Sequence[int],
    *,
    headers: Sequence[Mapping[str, Any]] = (),
    excluded: Sequence[Mapping[str, Any]] = (),
    title: str = "codegen-eval report",
    samples: Sequence[dict[str, Any]] = (),
) -> str:
    """One self-contained page: inline CSS and SVG, no external assets or scripts. `samples`
    (report_samples.sample_rows): a per-problem drill-down, each sample opening on a click."""
    any_speed = any(g.speedup_at for g in summary)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
    ]
    for h in headers:
        out.append(
            '<p class="meta">'
            + _esc(
                f"suites: {', '.join(h.get('suites', []))} · model: {h.get('model') or '—'} · "
                f"solver: {h.get('solver', '?')} · n: {h.get('n', '?')} · started: {h.get('started', '?')}"
            )
            + "</p>"
        )
        for suite, note in (h.get("suite_notes") or {}).items():
            out.append(f'<p class="meta">{_esc(suite)}: {_esc(note_text(note))}</p>')
    out.append("<h2>Results</h2>")
    out.append(
        '<table id="results"><thead><tr><th class="l">suite</th><th class="l">language/variant</th>'
    )
    out.append("<th>problems</th><th>n</th><th>skipped</th>")
    out += [f"<th>pass@{k}</th>" for k in ks]
    any_upstream = any(g.upstream_speedup_at for g in summary)
    if any_speed:
        out += [f"<th>speedup@{k}</th><th>efficiency@{k}</th>" for k in ks]
    if any_upstream:
        out += [f"<th>ParEval speedup_n@{k}</th><th>ParEval efficiency_n@{k}</th>" for k in ks]
    out.append('<th class="l">failures</th></tr></thead><tbody>')
    for g in summary:
        cls = ' class="suite"' if g.label == "(all)" else ""
        cells = [f'<td class="l">{_esc(g.suite)}</td>', f'<td class="l">{_esc(g.label)}</td>']
        cells += [f"<td>{g.problems}</td>", f"<td>{g.candidates}</td>"]
        cells.append(f"<td>{g.skipped or ''}</td>")
        cells += [f"<td>{_fmt(g.pass_at.get(k))}</td>" for k in ks]
        if any_speed:
            cells += [
                f"<td>{_fmt(g.speedup_at.get(k), 2)}</td><td>{_fmt(g.efficiency_at.get(k), 2)}</td>"
                for k in ks
            ]
        if any_upstream:
            cells += [
                f"<td>{_fmt(g.upstream_speedup_at.get(k), 2)}</td>"
                f"<td>{_fmt(g.upstream_efficiency_at.get(k), 2)}</td>"
                for k in ks
            ]
        cells.append(f'<td class="l">{_esc(_failures_text(g, 8))}</td>')
        out.append(f"<tr{cls}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    if any_speed:
        out.append(
            '<p class="meta">speedup@k / efficiency@k: expected best of k samples, failed '
            "samples count 0 (codegen-lab's estimator).</p>"
        )
    if any_upstream:
        out.append(
            '<p class="meta">ParEval speedup_n@k / efficiency_n@k: the formula of ParEval\'s '
            "analysis/metrics.py (passing samples only, at the largest "
            "launch config run), for comparison with published tables.</p>"
        )

    out += budget_html(summary)

    # failure classes with details
    out.append("<h2>Failure classes</h2>")
    if not any(g.failure_details for g in summary if g.label == "(all)"):
        out.append('<p id="no-failures">No candidate failed.</p>')
    else:  # no empty table under "No candidate failed."
        out.append('<table id="failures"><thead><tr><th class="l">suite</th>')
        out.append('<th class="l">class</th><th class="l">detail</th><th>count</th></tr></thead>')
        out.append("<tbody>")
        for g in summary:
            if g.label != "(all)":
                continue
            for cls_name, details in sorted(g.failure_details.items()):
                for detail, count in details.most_common():
                    out.append(
                        f'<tr><td class="l">{_esc(g.suite)}</td>'
                        f'<td class="l">{_esc(cls_name)}</td>'
                        f'<td class="l">{_esc(detail or "—")}</td><td>{count}</td></tr>'
                    )
        out.append("</tbody></table>")

    out.append('<h2>Plots</h2><div class="plots">')
    sub = [g for g in summary if g.label != "(all)"] or list(summary)
    for k in ks:
        items = [
            (f"{g.suite} {g.label}", g.pass_at[k] or 0.0)
            for g in sub
            if g.pass_at.get(k) is not None
        ]
        out.append(_bar_chart(f"pass@{k} per language/variant", items, vmax=1.0))
    totals: Counter[str] = Counter()
    for g in summary:
        if g.label == "(all)":
            totals.update(g.failures)
    out.append(
        _bar_chart("failure classes (all suites)", [(c, float(n)) for c, n in totals.most_common()])
    )
    speeds = [s for g in summary if g.label == "(all)" for s in g.speedups]
    out.append(_histogram("speedup of passing candidates", speeds))
    out.append("</div>")

    if excluded:
        out.append('<h2>Excluded problems</h2><ul id="denominators">')
        out += [
            f"<li>{_esc(x)}</li>"
            for x in denominator_lines(denominators(summary, excluded, ks), ks)
        ]
        out.append('</ul><table id="excluded"><thead><tr>')
        out.append(
            '<th class="l">suite</th><th class="l">sample</th><th class="l">reason</th></tr></thead><tbody>'
        )
        for e in excluded:
            out.append(
                f'<tr><td class="l">{_esc(e["suite"])}</td><td class="l">{_esc(e["sample_id"])}</td>'
                f'<td class="l">{_esc(e["reason"])}</td></tr>'
            )
        out.append("</tbody></table>")
    out += samples_html(samples)
    out.append("</body></html>")
    return "\n".join(out)


def report_from_logs(
    paths: Sequence[str], ks: Sequence[int] | None = None
) -> tuple[list[GroupSummary], list[int], list[HeaderRecord], list[ExcludedRecord]]:
    """Read logs and summarize: (summary, ks, headers, excluded). ks default to the logs'."""
    from codegen_eval.log import read_log

    records: list[ScoreRecord] = []
    headers: list[HeaderRecord] = []
    excluded: list[ExcludedRecord] = []
    log_ks: set[int] = set()
    for p in paths:
        contents = read_log(p)
        headers.append(contents.header)
        records.extend(contents.score_records)
        seen = set()
        for e in contents.excluded:
            if (e["suite"], e["sample_id"]) not in seen:
                seen.add((e["suite"], e["sample_id"]))
                excluded.append(e)
        log_ks.update(int(k) for k in contents.header.get("ks", [1]))
    use_ks = sorted(ks or log_ks or {1})
    return summarize(records, use_ks), use_ks, headers, excluded
