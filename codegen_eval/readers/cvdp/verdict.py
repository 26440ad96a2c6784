"""Reading the JUnit reports of a CVDP run: pytest's (one per harness test) and cocotb's
(one per simulation, archived by the vvp shim). Reports are checked for structure, not
trusted for counts they claim: test cases are counted one by one."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from codegen_eval.errors import CodegenEvalError

_BAD = ("failure", "error", "skipped")


@dataclass(slots=True)
class Report:
    total: int = 0
    passed: int = 0
    problems: list[str] = field(default_factory=list)  # "name: failure: message"

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total


class ReportError(CodegenEvalError, ValueError):
    """Not a JUnit report (missing, unparsable, no <testsuite>)."""


def read_report(text: str | None) -> Report:
    if text is None:
        raise ReportError("no report was written")
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise ReportError("the report declares a DTD or entities")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ReportError(f"the report is not XML ({exc})") from None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if root.tag not in ("testsuite", "testsuites") or not suites:
        raise ReportError(f"the report's root is <{root.tag}>, not <testsuites>")
    rep = Report()
    for suite in suites:
        for case in suite.iter("testcase"):
            rep.total += 1
            bad = [child for child in case if child.tag in _BAD]
            if not bad:
                rep.passed += 1
                continue
            name = f"{case.get('classname', '')}.{case.get('name', '?')}".strip(".")
            msg = (bad[0].get("message") or (bad[0].text or "")).strip().splitlines()
            rep.problems.append(f"{name}: {bad[0].tag}: {msg[0][:200] if msg else ''}")
    return rep
