"""APPL programs that generate and repair parallel/HDL code, and the kernel-crash agent.

from agents import RepairSolver, with_repair, KernelAgent
"""

from agents.kernel import KernelAgent, extract_diff
from agents.repair import RepairSolver, with_repair

__all__ = ["KernelAgent", "RepairSolver", "extract_diff", "with_repair"]
