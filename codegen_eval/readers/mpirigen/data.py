"""MPIrigen's evaluation programs from a checkout of Scientific-Computing-Lab/MPI-rigen.

Two sets ship in the repository:

- "test" (default): the `datasets` save `data/test/test/` (Arrow files named by its
  state.json), 1,323 programs, each `program`, `code` (main() with every MPI call removed, each
  line numbered "N: ") and `mpi_labels` (the `(LINE COL, CALL;)` groups). Upstream's released
  MonoCoder predictions (`bpe_1000_examples.jsonl`) are its first 1,000 rows, in order.
- "gpt": `data/HPCorpusMPI_gpt.jsonl`, the 1,000 programs of upstream's GPT-3.5 comparison:
  `program`, `code` (main() with the MPI calls removed, lines not numbered) and `label` (the
  original main(), calls included). Upstream asked GPT for the whole program; here the lines
  are numbered as in the test set and the groups are derived from the label (the removed lines
  that hold an MPI call, placed after the code line before them), so both sets prompt and
  score the same way.

The prompt is upstream's: the numbered code, then " \\n parallel " (test_mpi.py feeds
`f"{code} \\n parallel "` to the model and reads the groups it generates after "parallel").
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers._jsonl import jsonl_records

SETS = ("test", "gpt")
TEST_DIR = Path("data/test/test")
GPT_FILE = Path("data/HPCorpusMPI_gpt.jsonl")
# Where a group starts: "(LINE COL, " before an MPI call. A group runs to the next start
# and must end with ";)" (split, not one lazy pattern: answers are hostile text, and a lazy
# scan from each start to the end of the text is quadratic).
_START = re.compile(r"\((\d+) (\d+),\s*(?=MPI_\w*\s*\()")
_NUMBER = re.compile(r"^\d+: ?", re.MULTILINE)
_MPI_STATEMENT = re.compile(r"MPI_\w*\s*\(.*?\)\s*;", re.DOTALL)


class MpirigenFormatError(CodegenEvalError, ValueError):
    """The checkout does not hold the files or fields this reader needs."""


@dataclass(frozen=True, slots=True)
class LabelCall:
    after_line: int  # the numbered line the call follows
    order: int  # COL: 1, 2, ... after one line; 0: the call's value was used in an expression
    text: str  # "MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);"


@dataclass(frozen=True, slots=True)
class RigenProgram:
    name: str
    numbered: str  # the code as the model sees it: "1: int main(...)\n2: {\n..."
    label: str  # the groups, as upstream's label
    dataset: str  # "test" or "gpt"

    @property
    def prompt(self) -> str:
        return f"{self.numbered} \n parallel "

    @property
    def code_lines(self) -> list[str]:
        return _NUMBER.sub("", self.numbered).split("\n")


def label_calls(label: str) -> list[LabelCall]:
    """The groups that read as one call each; others are left out (see static_blocker)."""
    starts = list(_START.finditer(label))
    out = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(label)
        body = label[m.end() : end].rstrip()
        if body.endswith(");)"):
            out.append(LabelCall(int(m[1]), int(m[2]), body[:-1].strip()))
    return out


def number_lines(code: str) -> str:
    """Upstream's numbering: every line of `code` (a trailing empty one included)."""
    return "".join(f"{k}: {line}\n" for k, line in enumerate(code.split("\n"), 1))


def derive_label(code: str, full: str) -> str:
    """The groups of `full` (the original main()) against `code` (the same with the MPI
    calls removed): each removed run of lines, split into its MPI call statements, placed
    after the code line before it."""
    a, b = code.split("\n"), full.split("\n")
    groups = []
    for tag, i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag not in ("insert", "replace"):
            continue
        removed = "\n".join(b[j1:j2])
        for k, m in enumerate(_MPI_STATEMENT.finditer(removed), 1):
            call = " ".join(m.group().split())
            groups.append(f"({i1} {k}, {call})")
    return " ".join(groups)


def _read_arrow_split(split_dir: Path) -> list[dict]:
    import pyarrow as pa

    state = split_dir / "state.json"
    try:
        files = [d["filename"] for d in json.loads(state.read_text())["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MpirigenFormatError(f"{state}: not a datasets save ({exc})") from None
    rows: list[dict] = []
    for name in files:
        path = split_dir / name
        try:
            with pa.memory_map(str(path)) as src:
                rows += pa.ipc.open_stream(src).read_all().to_pylist()
        except (OSError, pa.ArrowInvalid) as exc:
            raise MpirigenFormatError(
                f"{path}: unreadable ({exc}); the datasets saves are incomplete in some "
                "copies of the repository: try --mpirigen-set gpt"
            ) from None
    return rows


def _need(row: dict, keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if not isinstance(row.get(k), str)]
    if missing:
        raise MpirigenFormatError(f"{where}: no string field(s) {', '.join(missing)}")


def load_test_set(checkout: Path) -> list[RigenProgram]:
    out = []
    for n, row in enumerate(_read_arrow_split(checkout / TEST_DIR)):
        _need(row, ("program", "code", "mpi_labels"), f"{checkout / TEST_DIR} row {n}")
        out.append(RigenProgram(row["program"], row["code"], row["mpi_labels"], "test"))
    return out


def load_gpt_set(checkout: Path) -> list[RigenProgram]:
    path = checkout / GPT_FILE
    out = []
    for n, row in jsonl_records(path, MpirigenFormatError):
        _need(row, ("program", "code", "label"), f"{path}:{n}")
        label = derive_label(row["code"], row["label"])
        out.append(RigenProgram(row["program"], number_lines(row["code"]), label, "gpt"))
    return out


def load_programs(checkout: str | Path, dataset: str = "test") -> list[RigenProgram]:
    root = Path(checkout)
    if not root.is_dir():
        raise MpirigenFormatError(f"{root} is not a directory (give your MPI-rigen checkout)")
    if dataset not in SETS:
        raise MpirigenFormatError(f"unknown set {dataset!r}: choose {' or '.join(SETS)}")
    programs = load_test_set(root) if dataset == "test" else load_gpt_set(root)
    if not programs:
        raise MpirigenFormatError(f"{root}: the {dataset} set is empty")
    return programs
