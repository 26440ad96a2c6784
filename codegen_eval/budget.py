"""Pass rate by model-call budget, and what a solved problem cost in tokens.

Two kinds of runs spend model calls differently:
  samples   `generate`: every candidate is one independent call. Within a budget of b calls
            per problem the pass rate is the unbiased pass@b (problems with n >= b).
  rounds    an agent with a repair chain per candidate (the repair solver's records carry
            `max_rounds` and `passed_round`): within b calls, the share of chains that had
            passed by round b, averaged over problems.

So `generate -n R` and `repair --solver-opt rounds=R -n 1` are compared at equal budget on the
same row: pass within 1, 2, ..., R calls. A chain that passed in round r is counted from round
r on only if the runner's own re-scoring of its final code passed too: the verdict is never
the agent's.

Tokens per solved problem: every prompt and completion token the group's candidates used
(repair rounds included), divided by the problems with at least one passing candidate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codegen_eval.metrics import mean_pass_at_k

__all__ = ["Budget", "budget_of"]


@dataclass
class Budget:
    kind: str  # "samples" | "rounds"
    max_calls: int  # the largest budget with a defined pass rate (n, or the rounds allowed)
    pass_within: dict[int, float | None] = field(default_factory=dict)  # calls -> pass rate
    problems: int = 0
    solved: int = 0  # problems with at least one passing candidate
    calls: int = 0  # model calls made
    prompt_tokens: int = 0
    completion_tokens: int = 0
    has_tokens: bool = False  # whether any candidate recorded its token counts

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_per_solved(self) -> float | None:
        if not self.has_tokens or not self.solved:
            return None
        return self.tokens / self.solved

    @property
    def calls_per_problem(self) -> float | None:
        return self.calls / self.problems if self.problems else None


def _meta(record: dict[str, Any]) -> dict[str, Any]:
    meta = record.get("candidate")
    return meta if isinstance(meta, dict) else {}


def _is_chain(meta: dict[str, Any]) -> bool:
    return isinstance(meta.get("max_rounds"), int)


def _first_pass_round(record: dict[str, Any]) -> int | None:
    """The round in which a chain passed, by the runner's verdict on its final code."""
    if record.get("status") != "pass":
        return None
    meta = _meta(record)
    for key in ("passed_round", "chosen_round", "rounds_used"):
        value = meta.get(key)
        if isinstance(value, int) and value >= 1:
            return value
    return 1


def budget_of(records: Sequence[dict[str, Any]]) -> Budget | None:
    """The budget view of one group's score records (skipped ones left out, as in pass@k);
    None when there is nothing to show."""
    scored = [r for r in records if r.get("status") != "skipped"]
    if not scored:
        return None
    chains = any(_is_chain(_meta(r)) for r in scored)
    per_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        per_problem[r["sample_id"]].append(r)
    b = Budget("rounds" if chains else "samples", 0, problems=len(per_problem))
    for r in scored:
        meta = _meta(r)
        if "prompt_tokens" in meta or "completion_tokens" in meta:
            b.has_tokens = True
        b.prompt_tokens += int(meta.get("prompt_tokens") or 0)
        b.completion_tokens += int(meta.get("completion_tokens") or 0)
        used = meta.get("rounds_used")
        b.calls += used if chains and isinstance(used, int) else 1
    b.solved = sum(any(r.get("status") == "pass" for r in v) for v in per_problem.values())
    if chains:
        b.max_calls = max(int(_meta(r).get("max_rounds") or 1) for r in scored)
        for calls in range(1, b.max_calls + 1):
            rates = [
                sum(1 for r in v if (p := _first_pass_round(r)) is not None and p <= calls) / len(v)
                for v in per_problem.values()
            ]
            b.pass_within[calls] = sum(rates) / len(rates)
    else:
        counts = [(len(v), sum(r.get("status") == "pass" for r in v)) for v in per_problem.values()]
        b.max_calls = max(n for n, _ in counts)
        for calls in range(1, b.max_calls + 1):
            b.pass_within[calls] = mean_pass_at_k(counts, calls)
    return b


# ------------------------------------------------------------------------- views
def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _rows(summary: Sequence[Any]) -> list[tuple[str, Budget]]:
    """(suite, budget) for each suite's overall row that has a budget."""
    return [(g.suite, g.budget) for g in summary if g.label == "(all)" and g.budget is not None]


def worth_showing(summary: Sequence[Any]) -> bool:
    """A budget table says something beyond pass@k when a run repaired, sampled more than
    once, or recorded its tokens."""
    return any(b.kind == "rounds" or b.max_calls > 1 or b.has_tokens for _, b in _rows(summary))


def budget_header(max_calls: int) -> list[str]:
    return [f"pass ≤{c} call{'s' if c > 1 else ''}" for c in range(1, max_calls + 1)]


def budget_cells(b: Budget, max_calls: int) -> list[str]:
    solved = f"{b.solved}/{b.problems}"
    calls = _fmt(b.calls_per_problem, 2)
    per = [_fmt(b.pass_within.get(c)) for c in range(1, max_calls + 1)]
    return [b.kind, calls, *per, solved, _fmt(b.tokens_per_solved, 0)]


BUDGET_NOTE = (
    "pass ≤c calls: samples = pass@c of independent samples; rounds = chains passed by round c "
    "(re-scored by the runner). Equal budget: the same c. tokens/solved = all prompt + "
    "completion tokens / problems solved."
)


def print_budget_table(summary: Sequence[Any], console: Any) -> None:
    from rich.table import Table

    rows = _rows(summary)
    if not rows or not worth_showing(summary):
        return
    top = max(b.max_calls for _, b in rows)
    table = Table(title="pass by model-call budget (per problem)")
    for col in ["suite", "kind", "calls/problem", *budget_header(top), "solved", "tokens/solved"]:
        table.add_column(col, justify="left" if col in ("suite", "kind") else "right")
    for suite, b in rows:
        table.add_row(suite, *budget_cells(b, top))
    console.print(table)
    console.print(BUDGET_NOTE, highlight=False)


def budget_html(summary: Sequence[Any]) -> list[str]:
    import html

    rows = _rows(summary)
    if not rows or not worth_showing(summary):
        return []
    top = max(b.max_calls for _, b in rows)
    cols = ["calls/problem", *budget_header(top), "solved", "tokens/solved"]
    out = [
        "<h2>Pass by model-call budget</h2>",
        '<table id="budget"><thead><tr><th class="l">suite</th><th class="l">kind</th>'
        + "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        + "</tr></thead><tbody>",
    ]
    for suite, b in rows:
        cells = budget_cells(b, top)
        out.append(
            f'<tr><td class="l">{html.escape(suite)}</td><td class="l">{cells[0]}</td>'
            + "".join(f"<td>{html.escape(c)}</td>" for c in cells[1:])
            + "</tr>"
        )
    out.append(f'</tbody></table><p class="meta">{html.escape(BUDGET_NOTE)}</p>')
    return out
