"""Writes a checkout of our own in MPI-rigen's layout (tests only): the `datasets` save of
the test split (data/test/test: state.json naming an Arrow stream file of program / code /
mpi_labels / full rows) and data/HPCorpusMPI_gpt.jsonl (program / code / label), from the
programs in mpirigen_fixture/programs.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa

FIXTURE = Path(__file__).parent / "mpirigen_fixture"
_GROUP = re.compile(r"\((\d+) (\d+),\s*(MPI_\w*\(.*?\);)\)")


def fixture_programs() -> list[dict]:
    return json.loads((FIXTURE / "programs.json").read_text())


def numbered(lines: list[str]) -> str:
    return "".join(f"{k}: {line}\n" for k, line in enumerate(lines, 1))


def full_program(p: dict) -> str:
    """The original main(): each label call after its line (the gpt set's `label`)."""
    after: dict[int, list[str]] = {}
    for m in _GROUP.finditer(p["mpi_labels"]):
        after.setdefault(int(m[1]), []).append(m[3])
    out = []
    for k, line in enumerate(p["lines"], 1):
        out.append(line)
        out += [f"  {c}" for c in after.get(k, [])]
    return "\n".join(out)


def write_checkout(root: Path, programs: list[dict] | None = None) -> Path:
    programs = fixture_programs() if programs is None else programs
    split = root / "data" / "test" / "test"
    split.mkdir(parents=True)
    rows = [{"program": p["program"], "code": numbered(p["lines"]),
             "mpi_labels": p["mpi_labels"], "full": numbered(p["lines"])} for p in programs]  # fmt: skip
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(split / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "test"}
    (split / "state.json").write_text(json.dumps(state))
    (root / "data" / "test" / "dataset_dict.json").write_text('{"splits": ["train", "test"]}')
    with open(root / "data" / "HPCorpusMPI_gpt.jsonl", "w") as f:
        for p in programs:
            code = "\n".join(p["lines"])
            f.write(json.dumps({"program": p["program"], "code": code,
                                "label": full_program(p)}) + "\n")  # fmt: skip
    return root
