"""Generate -> compile -> test -> repair loops for MPI, OpenMP, CUDA and Verilog (see
docs/agents.md)."""

from agents.repair.prompts import program_model, repair_hint, system_prompt
from agents.repair.solver import Attempt, RepairSolver, Round, with_repair

__all__ = [
    "Attempt",
    "RepairSolver",
    "Round",
    "program_model",
    "repair_hint",
    "system_prompt",
    "with_repair",
]
