"""The suite's problems, in a fixed order. Every problem here was written for this suite."""

from __future__ import annotations

from ..spec import Problem
from .comb import ARITHMETIC, COMBINATIONAL
from .fsm import FSMS, STORAGE
from .seq import COUNTERS, REGISTERS, SHIFT_REGISTERS

ALL_PROBLEMS: tuple[Problem, ...] = tuple(
    COMBINATIONAL + ARITHMETIC + REGISTERS + COUNTERS + SHIFT_REGISTERS + FSMS + STORAGE
)

__all__ = ["ALL_PROBLEMS"]
