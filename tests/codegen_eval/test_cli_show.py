"""`codegen-eval show LOG [ID]`: the per-problem view of a run log, in the terminal and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from codegen_eval import cli

HEADER = {"type": "header", "log_version": 1, "suites": ["s"], "n": 2, "ks": [1]}


def _log(tmp_path: Path) -> Path:
    records = [HEADER]
    for sid, index, status, cls, code in [
        ("alpha/with-a-long-id-that-must-not-be-cut", 0, "pass", None, "int a;"),
        ("alpha/with-a-long-id-that-must-not-be-cut", 1, "fail", "compile_error:syntax", "int"),
        ("beta", 0, "fail", "wrong_answer", "int b;"),
    ]:
        records.append({"type": "candidate", "suite": "s", "sample_id": sid, "index": index,
                        "code": code, "raw": f"```c\n{code}\n```", "metadata": {}})  # fmt: skip
        records.append({"type": "score", "suite": "s", "sample_id": sid, "index": index,
                        "value": float(status == "pass"), "status": status,
                        "failure_class": cls, "metrics": {},
                        "explanation": f"why {sid} {index}\nsecond line"})  # fmt: skip
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return log


def test_show_lists_every_sample_with_its_class(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log)]) == 0
    out = capsys.readouterr().out
    assert "alpha/with-a-long-id-that-must-not-be-cut" in out
    assert "compile_error:syntax" in out and "wrong_answer" in out and "3 samples" in out


def test_show_id_prints_code_reply_and_explanation_whole(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log), "beta"]) == 0
    out = capsys.readouterr().out
    assert "why beta 0" in out and "second line" in out  # the whole explanation
    assert "int b;" in out and "raw reply" in out and "```c" in out


def test_show_json_and_an_unknown_id(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["index"], r["status"]) for r in rows] == [
        ("alpha/with-a-long-id-that-must-not-be-cut", 0, "pass"),
        ("alpha/with-a-long-id-that-must-not-be-cut", 1, "fail"),
        ("beta", 0, "fail"),
    ]
    assert cli.main(["show", str(log), "alpha"]) == 2  # a usage error (docs/cli.md)
    err = capsys.readouterr().err
    assert "no sample 'alpha'" in err and "alpha/with-a-long-id-that-must-not-be-cut" in err


CHROMIUM = "/usr/bin/chromium"
CLICK = """
<script>
// a real click on the failed sample's summary, then what the browser laid out
window.addEventListener("load", () => {
  const sample = document.querySelector('details.sample[data-id="beta"]');
  const before = sample.querySelector("pre.code").checkVisibility();
  sample.querySelector("summary").click();
  const code = sample.querySelector("pre.code");
  document.body.dataset.result = JSON.stringify({
    open: sample.open,
    visibleBefore: before,
    visibleAfter: code.checkVisibility(),
    code: code.textContent,
    explanation: sample.querySelector("pre.explanation").textContent,
  });
});
</script>
"""


def test_the_html_report_opens_a_sample_on_a_click(tmp_path: Path, capsys) -> None:
    import re
    import subprocess

    log = _log(tmp_path)
    page = tmp_path / "report.html"
    assert cli.main(["report", str(log), "-o", str(page)]) == 0
    html = page.read_text()
    assert 'id="problems"' in html and "<script" not in html  # the drill-down needs no script
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", CLICK + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         probe.as_uri()],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-result="([^"]*)"', dom.stdout)
    assert found, dom.stdout[-2000:]
    import html as html_lib

    result = json.loads(html_lib.unescape(found.group(1)))
    assert result["open"] is True
    assert result["visibleBefore"] is False and result["visibleAfter"] is True
    assert result["code"] == "int b;" and result["explanation"].startswith("why beta 0")
