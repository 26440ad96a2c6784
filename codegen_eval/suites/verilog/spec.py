"""The compact problem description the suite is written in.

A `Problem` names its ports (width, direction, role), holds the natural-language spec and the
body of the reference module, and says how to drive it (directed vectors, then seeded random
ones). The prompt, the reference module and the testbench are all generated from it, so the
three can never disagree about the interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["input", "output"]
Role = Literal["data", "clock", "reset"]

CANDIDATE_TOP = "TopModule"
REFERENCE_TOP = "RefModule"


@dataclass(frozen=True, slots=True)
class Port:
    name: str
    width: int = 1
    direction: Direction = "input"
    role: Role = "data"
    active_low: bool = False  # resets only
    asynchronous: bool = False  # resets only: documented in the prompt, exercised mid-cycle
    signed: bool = False
    # Verilog expression for one random stimulus value. `R` stands for a fresh signed 32-bit
    # random number and `U` for a fresh unsigned one, both drawn from the seeded generator;
    # `SELF` is the input's current value (so an input can change only now and then).
    stim: str | None = None

    def decl(self) -> str:
        """The port as written in `module TopModule (...)`."""
        sign = " signed" if self.signed else ""
        rng = f" [{self.width - 1}:0]" if self.width > 1 else ""
        return f"{self.direction} logic{sign}{rng} {self.name}"


def inp(name: str, width: int = 1, **kw: object) -> Port:
    return Port(name, width, "input", **kw)  # type: ignore[arg-type]


def out(name: str, width: int = 1, **kw: object) -> Port:
    return Port(name, width, "output", **kw)  # type: ignore[arg-type]


CLK = Port("clk", 1, "input", "clock")


def sync_reset(name: str = "rst", active_low: bool = False) -> Port:
    return Port(name, 1, "input", "reset", active_low=active_low)


def async_reset(name: str = "arst_n", active_low: bool = True) -> Port:
    return Port(name, 1, "input", "reset", active_low=active_low, asynchronous=True)


@dataclass(frozen=True, slots=True)
class Problem:
    id: str  # "p07_priority_encoder8": the order prefix keeps listings stable
    category: str  # combinational | arithmetic | register | counter | shift | fsm | fifo
    spec: str  # natural-language specification, without the interface
    ports: tuple[Port, ...]
    body: str  # reference implementation: everything between the port list and endmodule
    directed: tuple[dict[str, int], ...] = ()  # per step (combinational) or per cycle
    n_random: int = 200
    seed: int = 1
    reset_cycles: int = 2  # sequential only: cycles with reset held at the start
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [p.name for p in self.ports]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.id}: duplicate port names")
        if any(p.width < 1 or p.width > 64 for p in self.ports):
            raise ValueError(f"{self.id}: port widths must be 1..64 (the comparator is 64 bits)")
        if not self.outputs:
            raise ValueError(f"{self.id}: a problem needs at least one output")
        for vec in self.directed:
            unknown = set(vec) - {p.name for p in self.data_inputs + self.resets}
            if unknown:
                raise ValueError(f"{self.id}: directed vector names unknown inputs {unknown}")

    @property
    def inputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.direction == "input")

    @property
    def outputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.direction == "output")

    @property
    def clock(self) -> Port | None:
        return next((p for p in self.ports if p.role == "clock"), None)

    @property
    def resets(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.role == "reset")

    @property
    def data_inputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.inputs if p.role == "data")

    @property
    def sequential(self) -> bool:
        return self.clock is not None

    @property
    def steps(self) -> int:
        """Stimulus steps: reset cycles (sequential only) + directed + random."""
        lead = self.reset_cycles if self.sequential and self.resets else 0
        return lead + len(self.directed) + self.n_random

    @property
    def expected_samples(self) -> int:
        # Sequential testbenches compare twice a cycle (see tbgen); combinational once a step.
        return self.steps * (2 if self.sequential else 1)

    def interface(self, name: str = CANDIDATE_TOP) -> str:
        lines = ",\n".join(f"  {p.decl()}" for p in self.ports)
        return f"module {name} (\n{lines}\n);"

    def reference(self) -> str:
        body = self.body.strip("\n")
        return f"{self.interface(REFERENCE_TOP)}\n{body}\nendmodule\n"

    def prompt(self) -> str:
        notes = []
        if self.clock is not None:
            notes.append("All sequential logic is triggered on the rising edge of clk.")
        for r in self.resets:
            level = "low" if r.active_low else "high"
            kind = "asynchronous" if r.asynchronous else "synchronous"
            notes.append(f"{r.name} is an active-{level} {kind} reset.")
        extra = (" " + " ".join(notes)) if notes else ""
        return (
            f"{self.spec.strip()}{extra}\n\n"
            f"Implement the module with exactly this interface:\n\n{self.interface()}\n"
        )
