"""The per-problem part of a run: one row per scored sample (verdict and what the solver
produced), for `codegen-eval show` and the HTML report's drill-down, where each sample is a
`<details>` element: a click opens its explanation, code and raw reply (no script needed)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# What one sample may add to a page: a 1 MB reply in every sample would make the report
# unusable; the log keeps everything.
_MAX_TEXT = 20_000


def sample_rows(log: Path) -> list[dict[str, Any]]:
    """One row per scored sample of the run log, sorted by suite, id and sample index."""
    from codegen_eval.log import read_log

    contents = read_log(log)
    rows = []
    for key, score in contents.scores.items():
        cand = contents.candidates.get(key)  # none: a log written by hand, or cut
        rows.append(
            {
                "suite": score["suite"],
                "id": score["sample_id"],
                "index": score["index"],
                "status": score["status"],
                "failure_class": score["failure_class"],
                "explanation": score["explanation"],
                "metrics": score["metrics"],
                "code": cand["code"] if cand else "",
                "raw": cand["raw"] if cand else "",
            }
        )
    return sorted(rows, key=lambda r: (str(r["suite"]), str(r["id"]), int(r["index"] or 0)))


def _pre(text: str, cls: str) -> str:
    shown = text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n[... cut: see the log]"
    return f'<pre class="{cls}">{html.escape(shown) or "—"}</pre>'


def samples_html(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The "Problems" section: a table of problems, each sample a <details> that opens."""
    if not rows:
        return []
    out = ['<h2>Problems</h2><p class="meta">Click a sample to see the scorer\'s explanation, '
           "the extracted code and the model's reply.</p>",
           '<table id="problems"><thead><tr><th class="l">suite</th><th class="l">problem</th>'
           '<th class="l">samples</th></tr></thead><tbody>']  # fmt: skip
    by_problem: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_problem.setdefault((str(r["suite"]), str(r["id"])), []).append(r)
    for (suite, pid), samples in by_problem.items():
        cells = []
        for r in samples:
            status = str(r["status"])
            label = f"#{r['index']} {status}" + (
                f" · {r['failure_class']}" if r["failure_class"] else ""
            )
            body = [
                _pre(str(r["explanation"]), "explanation"),
                "<h4>code</h4>",
                _pre(str(r["code"]), "code"),
            ]
            if r["raw"] and r["raw"] != r["code"]:
                body += ["<h4>model reply</h4>", _pre(str(r["raw"]), "raw")]
            cells.append(
                f'<details class="sample" data-id="{html.escape(pid, quote=True)}" '
                f'data-index="{r["index"]}"><summary class="{html.escape(status)}">'
                f"{html.escape(label)}</summary>{''.join(body)}</details>"
            )
        out.append(
            f'<tr><td class="l">{html.escape(suite)}</td><td class="l id">{html.escape(pid)}</td>'
            f'<td class="l">{"".join(cells)}</td></tr>'
        )
    out.append("</tbody></table>")
    return out
