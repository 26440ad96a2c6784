"""The kernel-crash agent and its tools (see docs/agents.md)."""

from agents.kernel.agent import AgentResult, KernelAgent, StepRecord, briefing, feedback
from agents.kernel.diff import extract_diff, hunks, normalize_diff
from agents.kernel.tools import SourceTools

__all__ = [
    "AgentResult",
    "KernelAgent",
    "SourceTools",
    "StepRecord",
    "briefing",
    "extract_diff",
    "feedback",
    "hunks",
    "normalize_diff",
]
