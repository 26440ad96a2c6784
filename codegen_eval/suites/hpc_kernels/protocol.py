"""The scorer's end of the trusted host's verdict line (harness/host_main.c).

The host prints ``HPCK2 status=... detail=... <key=value fields> mac=<16 hex>`` where the
tag is SipHash-2-4 of everything before `` mac=`` under a fresh 128-bit key that the scorer
gave the host on stdin. Candidate processes share the sandbox's output stream in the worst
case (through a dumpable ancestor's file descriptors), so only a correctly tagged line is
read; anything else is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen_eval.tagging import new_key, siphash24, tagged_lines

__all__ = ["VERDICT_TAG", "HostVerdict", "new_key", "parse_host_verdict", "siphash24"]

VERDICT_TAG = "HPCK2"


@dataclass(frozen=True, slots=True)
class HostVerdict:
    """What the trusted host decided. status: pass, wrong, crash, timeout, tamper, error."""

    status: str
    detail: str
    base_s: float | None = None  # best window of our sequential reference, run before the candidate
    cand_s: float | None = None  # best repetition window of the candidate
    mean_s: float | None = None  # mean repetition window
    windows: tuple[float, ...] = ()
    fields: dict[str, str] = field(default_factory=dict)


def _float(fields: dict[str, str], name: str) -> float | None:
    try:
        return float(fields[name])
    except (KeyError, ValueError):
        return None


def parse_host_verdict(output: str, key: bytes) -> HostVerdict | None:
    """The host's verdict in `output`, or None when no line carries a valid tag."""
    for body in tagged_lines(output, key, VERDICT_TAG + " "):
        fields = dict(kv.split("=", 1) for kv in body.split()[1:] if "=" in kv)
        windows: tuple[float, ...] = ()
        try:
            windows = tuple(float(w) for w in fields.get("cand_windows", "").split(",") if w)
        except ValueError:
            windows = ()
        return HostVerdict(
            status=fields.get("status", "error"),
            detail=fields.get("detail", "-"),
            base_s=_float(fields, "base_s"),
            cand_s=_float(fields, "cand_s"),
            mean_s=_float(fields, "cand_mean_s"),
            windows=windows,
            fields=fields,
        )
    return None
