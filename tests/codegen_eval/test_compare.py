"""`codegen-eval report A B`: runs side by side, one column per run, in the terminal and in a
self-contained HTML page whose plots are checked as rendered by headless Chromium."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

from rich.console import Console

from codegen_eval.compare import (
    PASS_COLOR,
    RUN_COLORS,
    RunSummary,
    comparison_rows,
    label_runs,
    print_comparison,
    render_comparison_html,
)
from codegen_eval.report import summarize
from tests.codegen_eval.tiny_suite import BROKEN, REFERENCE

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def _rec(sample: str, index: int, status: str, fc: str | None = None, **metrics: float) -> dict:
    return {"type": "score", "suite": "s", "sample_id": sample, "index": index,
            "status": status, "value": float(status == "pass"), "failure_class": fc,
            "metrics": metrics, "language": "c", "variant": "serial"}  # fmt: skip


def _run(header: dict, records: list[dict], path: str = "x.jsonl") -> RunSummary:
    return RunSummary(path, header, groups=summarize(records, (1,)), records=records)


def test_columns_per_run_with_labels_and_no_pooling() -> None:
    a = _run(
        {"model": "gpt", "solver": "generate", "n": 2, "options": {"temperature": 0.2}},
        [
            _rec("p1", 0, "pass", speedup=2.0),
            _rec("p1", 1, "pass", speedup=3.0),
            _rec("p2", 0, "fail", "compile_error:syntax"),
            _rec("p2", 1, "pass", speedup=1.0),
        ],
    )
    b = _run(
        {"model": "gpt", "solver": "generate", "n": 2, "options": {"temperature": 0.8}},
        [
            _rec("p1", 0, "fail", "wrong_answer"),
            _rec("p1", 1, "fail", "wrong_answer"),
            _rec("p2", 0, "pass", speedup=1.5),
            _rec("p2", 1, "fail", "timeout:wall"),
        ],
    )
    c = _run({"model": "", "solver": "reference", "n": 1}, [_rec("p1", 0, "pass")])
    runs = [a, b, c]
    label_runs(runs)
    # the same model and solver are told apart by what differs (the temperature)
    assert [r.label for r in runs] == ["gpt · generate (T=0.2)", "gpt · generate (T=0.8)",
                                       "reference"]  # fmt: skip
    rows = {(r.group, r.metric): r for r in comparison_rows(runs, (1,))}
    top = [r for r in comparison_rows(runs, (1,)) if r.suite == "s"]
    assert top and top[0].metric == "problems" and top[0].values == ["2", "2", "1"]
    pass1 = next(r for r in comparison_rows(runs, (1,)) if r.metric == "pass@1")
    assert pass1.values == ["0.750", "0.250", "1.000"] and pass1.best == 2  # not pooled
    speed = next(r for r in comparison_rows(runs, (1,)) if r.metric == "speedup@1")
    # expected best of 1 per problem, failures count 0: a (2.5 + 0.5) / 2, b (0 + 0.75) / 2
    assert speed.values == ["1.50", "0.38", "—"] and speed.best == 0
    failures = next(r for r in comparison_rows(runs, (1,)) if r.metric == "failures")
    assert failures.values == ["compile_error 1", "wrong_answer 2, timeout 1", "none"]
    assert ("c/serial", "pass@1") in rows

    out = io.StringIO()
    print_comparison(runs, (1,), console=Console(file=out, width=200))
    text = out.getvalue()
    assert "[1] gpt · generate (T=0.2)" in text and "[3] reference" in text
    assert "different problems (2, 2, 1)" in text


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self.svgs = 0
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag not in {"script", "link", "img", "iframe"}, f"external asset or script <{tag}>"
        for _, value in attrs:
            assert "http://" not in (value or "") or tag == "svg", value  # no network
        if tag == "table":
            self._table = dict(attrs).get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag == "svg":
            self.svgs += 1
        if tag not in {"meta", "br", "rect"}:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "rect":
            return
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._table is not None and self.stack and self.stack[-1] in {"td", "th"}:
            self.tables[self._table][-1].append(data.strip())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TINY_COPIES="4", PYTHONPATH=str(ROOT))
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", "--plugin", "tests.codegen_eval.tiny_suite",
         *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    return cp


def _png_rgb(path: Path) -> tuple[int, int, set[tuple[int, int, int]]]:
    """Width, height and the set of colours of an 8-bit RGB/RGBA PNG (filters undone)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, bpp = zlib.decompress(idat), 4 if ctype == 6 else 3
    stride, prev, colours = width * bpp, bytearray(width * bpp), set()
    for y in range(height):
        f, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update(tuple(line[i : i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, colours


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_report_of_two_logs_side_by_side_renders_in_chromium(tmp_path: Path) -> None:
    ref, mixed = tmp_path / "ref.jsonl", tmp_path / "mixed.jsonl"
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(
        json.dumps({"sample_id": f"sum-{i:02d}", "code": REFERENCE if i % 2 else BROKEN["wrong"]})
        + "\n" for i in range(4)))  # fmt: skip
    _cli("run", "--suite", "tiny-c", "--solver", "reference", "--log", str(ref))
    _cli("run", "--suite", "tiny-c", "--samples", str(samples), "--log", str(mixed))
    page = tmp_path / "cmp.html"
    cp = _cli("report", str(ref), str(mixed), "-o", str(page))
    assert "2 runs side by side" in cp.stdout and "[2] file" in cp.stdout

    parser = _Page()
    parser.feed(page.read_text())
    parser.close()
    assert parser.stack == [] and parser.svgs >= 2
    header = parser.tables["results"][0]
    assert header[3:] == ["[1] reference", "[2] file"]  # a column per run, not one pooled row
    pass1 = next(row for row in parser.tables["results"] if "pass@1" in row)
    assert pass1[-2:] == ["1.000", "0.500"]
    assert any("wrong_answer" in row for row in parser.tables["failures"])
    assert len(parser.tables["disagreements"]) == 1 + 2  # header + sum-00, sum-02

    shot = tmp_path / "shot.png"  # kept out of the repository: tmp_path
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1100,1300", page.as_uri()],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    width, height, colours = _png_rgb(shot)
    assert (width, height) == (1100, 1300)
    # the bars were drawn: each run's colour and the pass colour of the outcome bars
    for colour in (RUN_COLORS[0], RUN_COLORS[1], PASS_COLOR):
        assert _rgb(colour) in colours, colour


def test_a_log_from_before_this_change_still_reports(tmp_path: Path) -> None:
    """Header fields added since (cli, ...) are optional: an old log loads and compares."""
    old = tmp_path / "old.jsonl"
    header = {"type": "header", "log_version": 1, "started": "2025-01-01T00:00:00+00:00",
              "suites": ["s"], "n": 1, "ks": [1], "versions": {}, "solver": "generate",
              "model": "local", "options": {"solver": "generate", "temperature": 0.8}}  # fmt: skip
    lines = [header, {"type": "candidate", "suite": "s", "sample_id": "p1", "index": 0,
                      "code": "x", "raw": "", "metadata": {}},
             {**_rec("p1", 0, "pass"), "code_hash": "h", "explanation": "", "cached": False},
             {"type": "end", "interrupted": False, "scored": 1}]  # fmt: skip
    old.write_text("".join(json.dumps(x) + "\n" for x in lines))
    from codegen_eval.compare import load_runs

    runs, ks = load_runs([old, old])
    assert ks == [1] and [r.label for r in runs] == [
        "local · generate (#1)",
        "local · generate (#2)",
    ]
    assert runs[0].status == "finished" and runs[0].groups[0].pass_at[1] == 1.0
    html = render_comparison_html(runs, ks)
    assert "local · generate (#2)" in html
