"""Skipped candidates (CUDA with no GPU) are shown, not silently dropped from the tables."""

from __future__ import annotations

import io

from rich.console import Console

from codegen_eval.report import print_table, render_html, summarize


def _rec(sample: str, variant: str, status: str) -> dict:
    return {
        "type": "score", "suite": "hpc-kernels", "sample_id": sample, "index": 0,
        "value": 1.0 if status == "pass" else 0.0, "status": status,
        "failure_class": "skipped_no_gpu" if status == "skipped" else None,
        "metrics": {}, "language": "cuda" if variant == "cuda" else "c", "variant": variant,
    }  # fmt: skip


def test_skipped_samples_get_their_own_column() -> None:
    records = [_rec("axpy/cuda", "cuda", "skipped"), _rec("gemv/cuda", "cuda", "skipped"),
               _rec("axpy/openmp", "openmp", "pass")]  # fmt: skip
    summary = summarize(records, (1,))
    out = io.StringIO()
    print_table(summary, (1,), console=Console(file=out, width=200))
    text = out.getvalue()
    assert "skipped" in text
    cuda_row = next(line for line in text.splitlines() if "cuda/cuda" in line)
    assert " 2 " in cuda_row  # the two skipped CUDA samples
    html = render_html(summary, (1,))
    assert "<th>skipped</th>" in html and "<td>2</td>" in html
