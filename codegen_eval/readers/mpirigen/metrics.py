"""MPIrigen's own metrics, computed as its evaluation script computes them.

An answer (and a label) is a run of groups `(LINE COL, MPI_Name(args);)`: the call goes after
line LINE of the numbered program, COL orders several calls after one line (0: a call whose
value was used inside an expression). Upstream reads each group as a location LINE.COL (a
float: "12 10" and "12 1" are the same location, 12.1), a function name and its arguments
(the text between the call's parentheses split at commas, compared as written). Two groups at
one location: the later one wins, in the first one's place (a dict).

Per program (gt = the label's groups, pred = the answer's):

- location: the share of gt groups for which some pred group lies within the tolerance T
  (whole lines LOC-T..LOC+T and, for T > 0, steps of 0.1 from LOC-T/10 to LOC+T/10,
  rounded to 2 decimals, with upstream's float arithmetic);
- function: among gt groups that have a pred group within tolerance, the share where one of
  those has the same name; None when no gt group has one, and left out when location is 0;
- args: the mean, over matched functions, of equal arguments (position by position) divided
  by the gt's argument count; None when no function matched.

With `mcc` (the MPI common core: Init, Finalize, Comm_rank, Comm_size, Send, Recv, Reduce,
Bcast) only gt groups of those functions count as found, while location still divides by
all gt groups and a program with none still counts 0 (upstream's `_MCC` tables do this).

The table (`table`) has one row per limit L = 1 .. the largest gt group count: the programs
with at most L gt groups, the mean of each column over programs that have a value.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_eval.readers._jsonl import jsonl_records

MPI_COMMON_CORE = frozenset(
    name
    for base in ("Finalize", "Init", "Comm_rank", "Comm_size", "Send", "Recv", "Reduce", "Bcast")
    for name in (f"MPI_{base}", f"mpi_{base.lower()}")
)
TABLE_COLUMNS = ("Limit Functions", "Locations", "Functions", "Args")
# Answers are read up to this many characters (MonoCoder generates at most 512 tokens, about
# 2 KB): the group patterns scan ahead lazily, and a hostile answer of many "(" without ";"
# would make that quadratic.
MAX_ANSWER = 16384

# A group is the text from a "(" up to the next ";" (non-greedy, as upstream reads it); its
# head is "LINE COL, MPI_Name(" anywhere inside it.
_GROUP = re.compile(r"[(](.*?)[;]", re.DOTALL)
_HEAD = re.compile(r"[0-9]+ [0-9]+,[\s]*MPI_[\w]*[(]")
# The model's end-of-text marker, which upstream turns into the "(" a group starts with.
_EOT = re.compile(r"<[|]endoftext[|]>[_]*")


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    args: tuple[str, ...]
    near: tuple[float, ...]  # the locations within tolerance of this one


def _arange(start: float, stop: float, step: float) -> list[float]:
    """numpy.arange's values for float arguments: length ceil((stop-start)/step), the second
    value start+step, the rest start + i*delta with delta = (start+step) - start."""
    n = math.ceil((stop - start) / step)
    if n <= 0:
        return []
    values = [start]
    if n > 1:
        second = start + step
        delta = second - start
        values.append(second)
        values.extend(start + i * delta for i in range(2, n))
    return values


def _round2(x: float) -> float:
    """numpy's round(x, 2) (x*100, round half to even, /100): Python's round(x, 2) rounds the
    exact decimal value instead and differs on some inputs."""
    return round(x * 100.0) / 100.0


def near_locations(loc: float, tolerance: int) -> tuple[float, ...]:
    if tolerance == 0:
        return (loc,)
    whole = _arange(loc - tolerance, loc + tolerance + 1, 1)
    tenths = _arange(loc - tolerance / 10, loc + 0.1 + tolerance / 10, 0.1)
    return tuple({_round2(x) for x in whole + tenths})


def _location(head: str) -> float:
    return round(float(head.replace(" ", ".", 1)), 2)


def parse_groups(text: str, tolerance: int) -> dict[float, Group]:
    """The groups of a label or an answer, keyed by location (see the module docstring)."""
    out: dict[float, Group] = {}
    text = _EOT.sub("(", text[:MAX_ANSWER])
    # No group ends after the last ";": cutting there keeps every match and makes the lazy
    # scan linear (each "(" then finds its ";").
    text = text[: text.rfind(";") + 1]
    for body in _GROUP.findall(text):
        m = _HEAD.search(body)
        if not m:
            continue
        where, name = m.group().split(",")
        loc = _location(where)
        out[loc] = Group(name[:-1].strip(), tuple(body[m.end() : -1].split(",")),
                         near_locations(loc, tolerance))  # fmt: skip
    return out


def _counts(gt: dict[float, Group], mcc: bool) -> Iterable[tuple[float, Group]]:
    return ((loc, g) for loc, g in gt.items() if not mcc or g.name in MPI_COMMON_CORE)


def found_locations(gt: dict[float, Group], pred: dict[float, Group], mcc: bool) -> int:
    return sum(any(loc in p.near for p in pred.values()) for loc, _ in _counts(gt, mcc))


def function_scores(
    gt: dict[float, Group], pred: dict[float, Group], mcc: bool
) -> tuple[float | None, float | None]:
    """(function, args) of one program; (None, None) when no gt group has a pred nearby."""
    reached = 0
    matched = 0
    arg_shares: list[float] = []
    for loc, g in _counts(gt, mcc):
        close = [p for p in pred.values() if loc in p.near]
        if not close:
            continue
        reached += 1
        hit = next((p for p in close if p.name == g.name), None)
        if hit is not None:
            matched += 1
            same = sum(a == b for a, b in zip(g.args, hit.args, strict=False))
            arg_shares.append(same / len(g.args))
    if reached == 0:
        return None, None
    return matched / reached, (sum(arg_shares) / len(arg_shares) if arg_shares else None)


@dataclass(frozen=True, slots=True)
class ProgramScore:
    n_gt: int  # gt groups (distinct locations): the table's "number of functions"
    location: float | None  # None: no gt groups (upstream leaves such programs out)
    function: float | None
    args: float | None


def score_program(label: str, answer: str, tolerance: int, mcc: bool = False) -> ProgramScore:
    gt = parse_groups(label, tolerance)
    pred = parse_groups(answer, tolerance)
    if not gt:
        return ProgramScore(0, None, None, None)
    found = found_locations(gt, pred, mcc)
    function, args = function_scores(gt, pred, mcc)
    if function is None or found == 0:
        function = args = None
    return ProgramScore(len(gt), found / len(gt), function, args)


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else None


def table(
    pairs: Sequence[tuple[str, str]], tolerance: int, mcc: bool = False
) -> list[tuple[int, float | None, float | None, float | None]]:
    """Upstream's table from (label, answer) pairs: rows (limit, locations, functions, args)."""
    scores = [score_program(label, answer, tolerance, mcc) for label, answer in pairs]
    rows = []
    for limit in range(1, max((s.n_gt for s in scores), default=0) + 1):
        chosen = [s for s in scores if s.n_gt and s.n_gt <= limit]
        rows.append((limit, _mean([s.location for s in chosen]),
                     _mean([s.function for s in chosen]), _mean([s.args for s in chosen])))  # fmt: skip
    return rows


def read_predictions(path: str | Path) -> list[tuple[str, str]]:
    """(label, pred) pairs of a predictions JSONL file (upstream's `pred`/`label` fields)."""
    pairs = []
    for n, row in jsonl_records(Path(path)):
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) for k in ("pred", "label")
        ):
            raise ValueError(f"{path}:{n}: wants string fields 'pred' and 'label'")
        pairs.append((row["label"], row["pred"]))
    if not pairs:
        raise ValueError(f"{path}: no predictions")
    return pairs


def _cell(v: float | None) -> str:
    return "" if v is None else repr(v)


def write_table(rows: Sequence[tuple], path: str | Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(TABLE_COLUMNS)
        w.writerows([str(r[0]), *map(_cell, r[1:])] for r in rows)


def read_table(path: str | Path) -> list[tuple[int, float | None, float | None, float | None]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or tuple(rows[0]) != TABLE_COLUMNS:
        raise ValueError(f"{path}: not a table with columns {', '.join(TABLE_COLUMNS)}")
    return [(int(float(r[0])), *(float(c) if c else None for c in r[1:4])) for r in rows[1:]]


def compare_tables(ours: Sequence[tuple], theirs: Sequence[tuple], places: int = 3) -> list[str]:
    """The cells that differ when rounded to `places` decimals ([] when the tables agree)."""
    diffs = []
    if len(ours) != len(theirs):
        diffs.append(f"{len(ours)} rows here, {len(theirs)} there")
    for a, b in zip(ours, theirs, strict=False):
        for col, x, y in zip(TABLE_COLUMNS, a, b, strict=True):
            fx = "" if x is None else f"{x:.{places}f}"
            fy = "" if y is None else f"{y:.{places}f}"
            if fx != fy:
                diffs.append(f"limit {a[0]} {col}: {fx or 'empty'} here, {fy or 'empty'} there")
    return diffs
