"""CVDP JSONL records (NVlabs/cvdp_benchmark) read into Samples, as upstream reads them.

A non-agentic record holds `id`, `categories` (`["cid003", "easy"]`), `input.prompt`,
`input.context` (files shown to the model), `output.context` (the files the answer is
saved to; with solutions, their reference content) and `harness.files` (a
docker-compose.yml whose service runs pytest on `src/test_runner.py`, a `src/.env` naming
SIM, TOPLEVEL, VERILOG_SOURCES, MODULE, and the cocotb test modules). Agentic records
(`context`, `patch`, `harness` at the top level) are another workflow and are not read.

Which categories are code generation, and what the model is told for each, follows
upstream's `src/constants.py` and `src/model_helpers.py` (written here in our own words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.types import Sample

# Upstream's CODE_GEN_CATEGORIES, and the subset that needs a commercial simulator (xrun).
CODE_GEN = frozenset({2, 3, 4, 5, 7, 12, 13, 14, 16})
COMMERCIAL = frozenset({12, 13, 14})
COMPREHENSION = frozenset({6, 8, 9, 10})
# What each category asks for (the system message upstream adds per category).
GUIDANCE = {
    2: "RTL Code Completion: respond only with the RTL code completed as required.",
    3: "Specification to RTL Translation: respond only with the RTL code for the specification.",
    4: "RTL Code Modification: respond only with the modified RTL code.",
    5: "Specification to RTL Translation with module instantiation and component reuse: "
    "respond only with the RTL code, reusing and instantiating the given components.",
    7: "RTL Lint Improvement or Power-Performance Optimization: respond only with the "
    "improved RTL code.",
    12: "Test Plan to Testbench Stimulus Generation: respond only with the testbench code.",
    13: "Test Plan to Testbench Checker Generation: respond only with the checker code.",
    14: "Test Plan to Assertions Generation: respond only with the assertions.",
    16: "RTL Debugging and Bug Fixing: respond only with the fixed RTL code.",
}
COMMERCIAL_IMAGE = "__VERIF_EDA_IMAGE__"  # upstream's placeholder for the licensed EDA image


class CvdpFormatError(CodegenEvalError, ValueError):
    """The file is not CVDP JSONL; the message says what was found."""


@dataclass(slots=True)
class ReadResult:
    samples: list[Sample] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # id -> reason
    total: int = 0


def category_of(record: dict[str, Any]) -> int | None:
    cats = record.get("categories") or []
    m = re.fullmatch(r"cid0*(\d+)", str(cats[0])) if cats else None
    return int(m.group(1)) if m else None


def parse_env(text: str) -> dict[str, str]:
    """A docker env_file (`KEY = VALUE` lines; upstream pads the `=` with spaces)."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        env[key.strip()] = value.strip()
    return env


def compose_command(text: str) -> str | None:
    """The first service's `command:` in upstream's docker-compose.yml."""
    import yaml

    try:
        doc = yaml.safe_load(text)
        services = (doc or {}).get("services") or {}
        first = next(iter(services.values()), None) or {}
        cmd = first.get("command")
    except (yaml.YAMLError, AttributeError):
        return None
    if isinstance(cmd, list):
        return " ".join(str(c) for c in cmd)
    return str(cmd) if cmd else None


def upstream_prompt(record: dict[str, Any], category: int) -> str:
    """The user prompt upstream builds for a non-agentic record (context files first, then
    the request, then where the answer is saved), with the category's guidance on top."""
    parts = [f"You are solving a CVDP problem of category {category}: {GUIDANCE[category]}\n"]
    for name, text in (record["input"].get("context") or {}).items():
        parts.append(f"\nConsider the following content for the file {name}:\n```\n{text}\n```")
    parts.append(f"\nProvide me one answer for this request: {record['input']['prompt']}\n")
    outs = list((record.get("output") or {}).get("context") or {})
    if len(outs) == 1:
        parts.append(
            "Please provide your response as plain text without any JSON formatting. Your "
            f"response will be saved directly to: {outs[0]}.\n"
        )
    return "".join(parts)


def _why_not(record: dict[str, Any]) -> str | None:
    """Why a record is not read (None: it is a non-agentic code-generation problem)."""
    if "input" not in record or "output" not in record:
        return "agentic record (context/patch): another workflow, not read by this reader"
    cat = category_of(record)
    if cat is None:
        return f"no category id in {record.get('categories')!r}"
    if cat in COMPREHENSION:
        return f"category {cat} is code comprehension (scored by BLEU or an LLM judge upstream)"
    if cat not in CODE_GEN:
        return f"category {cat} is not a code-generation category"
    files = (record.get("harness") or {}).get("files") or {}
    if "docker-compose.yml" not in files:
        return "no harness (docker-compose.yml) in the record"
    if not (record["output"].get("context") or {}):
        return "no output file to write the answer to"
    return None


def to_sample(record: dict[str, Any]) -> Sample:
    cat = category_of(record)
    assert cat is not None
    harness: dict[str, str] = dict(record["harness"]["files"])
    outputs: dict[str, str] = dict(record["output"]["context"])
    env = parse_env(harness.get("src/.env", ""))
    compose = harness["docker-compose.yml"]
    files = {f"code/{k}": v for k, v in (record["input"].get("context") or {}).items()}
    files.update({k: v for k, v in harness.items() if k.startswith("src/")})
    meta: dict[str, Any] = {
        "language": "verilog",
        "suite": "cvdp",
        "category": cat,
        "difficulty": (record.get("categories") or [None, None])[1],
        "outputs": list(outputs),
        "env": env,
        "command": compose_command(compose),
        "commercial": cat in COMMERCIAL or COMMERCIAL_IMAGE in compose,
        "upstream_id": record["id"],
    }
    # Files without solutions (the dataset on the hub) list the output paths, empty.
    has_solution = any(v.strip() for v in outputs.values())
    target = outputs[next(iter(outputs))] if len(outputs) == 1 and has_solution else ""
    return Sample(
        id=str(record["id"]),
        input=upstream_prompt(record, cat),
        target=target,
        metadata={**meta, "reference": outputs if has_solution else {}},
        files=files,
    )


def read_cvdp(path: str | Path) -> ReadResult:
    """Every record of a CVDP JSONL file: non-agentic code-generation ones as Samples, the
    rest in `excluded` with the reason."""
    p = Path(path)
    if p.is_dir():
        raise CvdpFormatError(
            f"{p} is a directory: give a CVDP JSONL file, e.g. example_dataset/"
            "cvdp_v1.1.0_example_nonagentic_code_generation_no_commercial_with_solutions.jsonl"
        )
    result = ReadResult()
    for _, row in jsonl_records(p, CvdpFormatError):
        if not isinstance(row, dict) or "id" not in row or "categories" not in row:
            raise CvdpFormatError(f"{p}: records need id and categories (a CVDP JSONL file)")
        result.total += 1
        why = _why_not(row)
        if why:
            result.excluded[str(row["id"])] = why
            continue
        result.samples.append(to_sample(row))
    return result
