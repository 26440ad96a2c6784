"""The screen: what a candidate's design may do, checked on the compiled design.

A text screen of Verilog source cannot work: an escaped identifier such as `\\h//` hides the
rest of its line from a regular expression but not from the compiler, and macros paste
`$fin` and `ish` into `$finish`. So the screen reads what `vvp` will run (see `vvp.py`),
after the preprocessor and the compiler have done all of that, and checks every statement that
belongs to the candidate:

* the candidate's scopes are the design-under-test instance and everything below it, plus any
  scope the harness does not have (a package or a compilation-unit function of the candidate);
* no system task or function except the pure ones in ALLOWED_SYSTEM_FUNCTIONS
  (`forbidden_construct:$display`): no output, no plusargs, no files, no `$finish`/`$stop`/
  `$fatal`, no `$random`/`$time`. So the candidate can neither print nor read anything;
* no `force`/`release`/`assign`/`deassign` statements (`forbidden_construct:force`): forcing
  an input port forces the testbench's own net, which both designs see;
* no reference to the harness (`tamper:harness_reference`): a candidate's statement may read
  only its own signals, constants and the values the testbench connects to its inputs, never
  the reference's outputs, the testbench's counters or tasks (hierarchical names, `$root`,
  calls, `disable`); no instance of a harness module (`tamper:reference_instance`);
* no driver on its own input ports (`forbidden_construct:driven_input`);
* the design-under-test's port directions are the reference's (`compile_error:interface`);
* the harness is unchanged (`tamper:harness_changed`): every harness scope has the same code,
  parameters and system calls as when the reference itself was simulated (the calibration),
  which catches `defparam` into the testbench and code added to the compilation unit; and
  every named harness net has the same driver, which catches a second driver on a testbench
  or reference wire (`assign (supply0, supply1) tb.tb_match = 1;`, a `pullup`, a gate).

Statements belong to the scope iverilog emits them in. It emits a design's expressions in the
design's own scope; what it hoists elsewhere is constants (a `BUFT` driving a literal), the
testbench-side adapters of port connections, and the resolver of a net with several drivers.
Adapters read only testbench values. A resolver in a harness scope is read as the design's
own value only where every driver it resolves is (a tri-state output); one that resolves a
harness net shows up as that net's changed driver.

`forbidden_constructs(code)` is the one text check left: `` `include `` anywhere in the source
(even in comments, so no lexer ambiguity can hide it), because it would read a harness file at
compile time.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .vvp import (
    Design,
    Stmt,
    code_segments,
    driven_by_dut,
    is_code,
    is_view,
    masked,
    net_drivers,
    scope_fingerprints,
    segment_hash,
)

# System functions with no side effect and no access to simulation state: sizes, casts,
# bit counts and math. Everything else a design under test may not call.
ALLOWED_SYSTEM_FUNCTIONS = frozenset(
    """$clog2 $signed $unsigned $bits $size $high $low $left $right $increment $dimensions
    $unpacked_dimensions $countones $countbits $onehot $onehot0 $isunknown $rtoi $itor
    $realtobits $bitstoreal $shortrealtobits $bitstoshortreal $ln $log10 $exp $sqrt $pow
    $floor $ceil $sin $cos $tan $asin $acos $atan $atan2 $hypot $sinh $cosh $tanh $asinh
    $acosh $atanh $abs $min $max""".split()
)
# Kept for callers of the old text screen: the tasks it used to look for (all still forbidden).
FORBIDDEN_TASKS = (
    "$value$plusargs", "$test$plusargs", "$fopen", "$fclose", "$fgets", "$fgetc", "$fscanf",
    "$fread", "$fwrite", "$fdisplay", "$fstrobe", "$fmonitor", "$readmemh", "$readmemb",
    "$writememh", "$writememb", "$system", "$finish", "$stop", "$fatal", "$dumpfile",
    "$dumpvars", "$sreadmemh", "$sreadmemb", "$ungetc", "$rewind", "$fseek", "$ftell", "$feof",
)  # fmt: skip
_FORBIDDEN_OPS = {
    "%force": "force",
    "%release": "release",
    "%cassign": "assign",
    "%deassign": "deassign",
}
_FORBIDDEN_DIRECTIVES = {".force": "force"}
# Instructions whose label operands are only read; any other instruction naming a label
# outside the candidate (a store, an assign, a release...) is treated as a write.
_READ_OPS = ("%load", "%wait", "%evctl", "%ix/getv", "%test_nul", "%vpi_call", "%vpi_func")
_NOT_CONSTANT = (".var", ".array", ".event", ".thread", ".ufunc", ".sfunc")
_INCLUDE = re.compile(r"`\s*include\b")
# `line makes iverilog report the candidate's errors in a file it names (the testbench's),
# so a compile error would read as the harness's (an interface error); found by the red
# team of the Verilog batches. No reference of VerilogEval or RTLLM uses it.
_LINE = re.compile(r"`\s*line\b")


@dataclass(frozen=True, slots=True)
class Finding:
    failure_class: str  # forbidden_construct:<what>, tamper:<what>, compile_error:interface
    message: str


@dataclass(slots=True)
class HarnessModel:
    """What the harness looks like when the reference is the design under test: measured
    once per problem (calibration) and compared with every candidate's compile."""

    dut_path: str  # with the run's tag replaced by TAG
    ports: list[tuple[str, str]]  # (direction, name) of the design under test
    harness_types: list[str]  # module names defined by the harness
    trusted: dict[str, dict[str, list[str]]]  # scope path -> fingerprint (see vvp.py)
    kinds: dict[str, str]  # scope path -> scope kind (module, task, package, ...)
    unit_defs: list[str]  # canonical declarations in the compilation unit ($unit)
    vpi_modules: list[str] = field(default_factory=list)
    # scope path -> net name -> its declaration and driver (see vvp.net_drivers)
    nets: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dut_path": self.dut_path,
            "ports": [list(p) for p in self.ports],
            "harness_types": self.harness_types,
            "trusted": self.trusted,
            "kinds": self.kinds,
            "unit_defs": self.unit_defs,
            "vpi_modules": self.vpi_modules,
            "nets": self.nets,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> HarnessModel:
        return cls(
            d["dut_path"],
            [(a, b) for a, b in d["ports"]],
            list(d["harness_types"]),
            {
                k: {"code": list(v["code"]), "params": list(v["params"])}
                for k, v in d["trusted"].items()
            },
            dict(d["kinds"]),
            list(d["unit_defs"]),
            list(d.get("vpi_modules", [])),
            {k: dict(v) for k, v in d.get("nets", {}).items()},
        )


def forbidden_constructs(code: str) -> list[str]:
    """Text-level findings: `` `include `` (see the module doc) and `` `line `` anywhere in
    the source."""
    return [name for name, pat in (("`include", _INCLUDE), ("`line", _LINE)) if pat.search(code)]


_COMMENTS_STRINGS_ESCAPED = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\\\S+', re.DOTALL)


def strip_comments_and_strings(code: str) -> str:
    """Source without comments, string literals and escaped identifiers (each becomes a
    space or ""), for looking up module headers. Not a security boundary."""
    return _COMMENTS_STRINGS_ESCAPED.sub(lambda m: '""' if m.group(0)[0] == '"' else " ", code)


def has_module(code: str, name: str) -> bool:
    bare = strip_comments_and_strings(code)
    return re.search(rf"\bmodule\s+{re.escape(name)}\b", bare) is not None


def _masked(path: str, tag: str | None) -> str:
    return path.replace(tag, "TAG") if tag else path


def find_dut(design: Design, top: str, tb_top: str) -> str | None:
    """The label of the testbench's instance of `top`."""
    tbs = {s.label for s in design.roots() if s.name == tb_top}
    for s in design.scopes.values():
        if s.kind == "module" and s.type == top and s.parent in tbs:
            return s.label
    return None


def harness_model(design: Design, *, top: str, tb_top: str, tag: str | None) -> HarnessModel:
    """The model of the harness from a compile whose design under test is trusted."""
    dut = find_dut(design, top, tb_top)
    if dut is None:
        raise ValueError(f"no instance of {top} under {tb_top} in the compiled design")
    inside = design.subtree(dut)
    trusted = set(design.scopes) - inside
    unit = [s.label for s in design.roots() if s.name == "$unit"]
    unit_defs = sorted(masked(st, tag) for st in design.stmts if st.scope in unit and st.label)
    return HarnessModel(
        dut_path=_masked(design.scopes[dut].path, tag),
        ports=[(d, n) for d, _, n in design.scopes[dut].ports],
        harness_types=sorted(
            {design.scopes[s].type for s in trusted if design.scopes[s].kind == "module"}
        ),
        trusted=scope_fingerprints(design, trusted, tag),
        kinds={_masked(design.scopes[s].path, tag): design.scopes[s].kind for s in trusted},
        unit_defs=unit_defs,
        vpi_modules=design.vpi_modules(),
        nets=net_drivers(design, trusted, inside, tag),
    )


class _Checker:
    def __init__(self, design: Design, dut: str, cand_scopes: set[str], tag: str | None) -> None:
        self.d = design
        self.dut = dut
        self.cand = cand_scopes
        self.tag = tag
        self.owned: set[str] = {lab for lab, st in design.defs.items() if st.scope in cand_scopes}
        self.allowed_sources: set[str] = set()
        self.findings: list[Finding] = []

    def add(self, failure_class: str, message: str) -> None:
        if all(f.failure_class != failure_class for f in self.findings):
            self.findings.append(Finding(failure_class, message))

    def name_of(self, label: str) -> str:
        if label in self.d.scopes:
            return _masked(self.d.scopes[label].path, self.tag).replace("TAG", "*")
        st = self.d.defs.get(label)
        where = self.d.scopes[st.scope].path if st and st.scope in self.d.scopes else "?"
        name = self.d.net_name(label) or label.split("_", 1)[0]
        return _masked(f"{where}.{name}", self.tag).replace("_TAG", "").replace("TAG", "*")

    def is_const(self, label: str) -> bool:
        st = self.d.defs.get(label)
        if st is None or st.head.startswith(_NOT_CONSTANT) or st.head.startswith("%"):
            return False
        return not self.d.refs(st)

    def readable(self, label: str, depth: int = 0) -> bool:
        """Own signals, constants, the values on the input ports, and what iverilog hoists
        out of the design's scope that depends only on such values: events (shared among
        scopes), resolvers (a tri-state output) and the ports of a switch island (`tran`
        to an output). A switch or driver that touches a harness net changes that net's
        driver, which `_check_harness_nets` refuses."""
        if label in self.owned or self.is_const(label):
            return True
        src = self.d.source(label)
        if src in self.allowed_sources or src in self.owned:
            return True
        st = self.d.defs.get(label)
        if st is not None and st.head.startswith((".event", ".resolv", ".port")) and depth < 8:
            refs = self.d.refs(st)
            return bool(refs) and all(self.readable(r, depth + 1) for r in refs)
        return False

    def inputs(self, ref_ports: list[tuple[str, str]] | None) -> None:
        """Which harness values the candidate may read: what drives its input ports."""
        dut = self.d.scopes[self.dut]
        want = {n for dr, n in (ref_ports or [(dr, n) for dr, _, n in dut.ports]) if dr == "INPUT"}
        nets = {
            self.d.net_name(lab): st
            for lab, st in self.d.defs.items()
            if st.scope == self.dut and st.head.startswith(".net")
        }
        for name in sorted(want):
            st = nets.get(name)
            if st is None:
                continue  # an unused input: iverilog dropped the net
            refs = self.d.refs(st)
            x = refs[0] if refs else None
            while x is not None and x in self.owned:
                inner = self.d.defs[x]
                r = self.d.refs(inner)
                if not is_view(inner) or len(r) != 1:
                    self.add(
                        "forbidden_construct:driven_input",
                        f"the design drives its own input port `{name}` (a second driver on "
                        "the testbench's net would change what the reference sees)",
                    )
                    x = None
                    break
                x = r[0]
            if x is not None and not self.is_const(x):
                self.allowed_sources.add(self.d.source(x))

    def check(self, st: Stmt) -> None:
        call = st.syscall()
        if call is not None and call not in ALLOWED_SYSTEM_FUNCTIONS:
            self.add(
                f"forbidden_construct:{call}",
                f"the design calls {call}; a design under test may not call system tasks or "
                "functions other than pure ones such as $clog2, $signed, $bits",
            )
        for prefix, what in _FORBIDDEN_OPS.items():
            if st.head.startswith(prefix):
                self.add(
                    f"forbidden_construct:{what}",
                    f"the design uses a procedural `{what}` statement, which a design under "
                    "test may not use (forcing a port forces the testbench's net)",
                )
        if st.head in _FORBIDDEN_DIRECTIVES:
            what = _FORBIDDEN_DIRECTIVES[st.head]
            self.add(f"forbidden_construct:{what}", f"the design uses `{what}`")
        reading = not st.head.startswith("%") or st.head.startswith(_READ_OPS)
        for r in self.d.refs(st):
            if r in self.d.scopes:
                if r not in self.cand:
                    self.add(
                        "tamper:harness_reference",
                        f"the design calls, forks or disables `{self.name_of(r)}` of the harness",
                    )
                continue
            if reading and self.readable(r):
                continue
            if r in self.owned or self.is_const(r):
                continue
            verb = "reads" if reading else "writes"
            self.add(
                "tamper:harness_reference",
                f"the design {verb} `{self.name_of(r)}` of the harness (a hierarchical reference "
                "outside its own instance)",
            )


def screen(
    design: Design,
    *,
    top: str,
    tb_top: str,
    tag: str | None,
    model: HarnessModel | None,
) -> list[Finding]:
    """Every rule of the module doc; [] when the design may run as is."""
    dut = find_dut(design, top, tb_top)
    if dut is None:
        return [Finding("compile_error:missing_top", f"the testbench has no instance of {top}")]
    inside = design.subtree(dut)
    tb_roots = {s.label for s in design.roots() if s.name == tb_top}
    unit = {s.label for s in design.roots() if s.name == "$unit"}
    if model is not None:
        trusted, doubles = _trusted_scopes(design, inside, model, tag)
    else:
        harness = set().union(*(design.subtree(r) for r in tb_roots)) if tb_roots else set()
        trusted, doubles = (harness - inside) | unit, []
    cand_scopes = set(design.scopes) - trusted
    chk = _Checker(design, dut, cand_scopes, tag)
    for path in doubles:
        chk.add(
            "tamper:harness_changed",
            f"the design declares a second scope named `{path.replace('TAG', '*')}` like the harness's",
        )

    # Declarations the candidate placed in the compilation unit belong to the candidate.
    unit_seen = Counter(model.unit_defs) if model is not None else Counter()
    unit_extra: list[Stmt] = []
    for st in design.stmts:
        if st.scope in unit and st.label and not is_code(st):
            key = masked(st, tag)
            if unit_seen[key]:
                unit_seen[key] -= 1
            else:
                chk.owned.add(st.label)
                unit_extra.append(st)

    ref_ports = model.ports if model is not None else None
    if model is not None:
        mine = {n: dr for dr, _, n in design.scopes[dut].ports}
        for dr, name in model.ports:
            if name in mine and mine[name] != dr:
                chk.add(
                    "compile_error:interface",
                    f"port `{name}` is {mine[name].lower()} here but {dr.lower()} in the reference",
                )
        if model.vpi_modules and design.vpi_modules() != model.vpi_modules:
            chk.add("tamper:harness_changed", "the compiled design loads other VPI modules")
    chk.inputs(ref_ports)

    harness_types = (
        set(model.harness_types)
        if model is not None
        else {design.scopes[s].type for s in trusted if design.scopes[s].kind == "module"}
    )
    for lab in cand_scopes:
        s = design.scopes[lab]
        if s.kind == "module" and s.type in harness_types:
            chk.add(
                "tamper:reference_instance",
                f"the design instantiates `{s.type}`, a module of the harness",
            )

    # The harness's own code must be what the calibration saw.
    unit_code_extra: set[tuple[str, int]] = set()
    if model is not None:
        now = scope_fingerprints(design, trusted, tag)
        for path, want in model.trusted.items():
            have = now.get(path)
            if have is None:
                continue  # a harness scope iverilog did not emit this time (nothing in it)
            if path == "$unit":
                extra = Counter(have["code"]) - Counter(want["code"])
                missing = Counter(want["code"]) - Counter(have["code"])
                if missing:
                    chk.add("tamper:harness_changed", "code of the compilation unit changed")
                if extra:
                    unit_code_extra = _segments_with_hashes(design, unit, set(extra), tag)
                continue
            if have != want:
                chk.add(
                    "tamper:harness_changed",
                    f"the harness scope `{path.replace('TAG', '*')}` is not what the reference "
                    "run compiled (a defparam or other change from the candidate)",
                )
        _check_harness_nets(chk, model, net_drivers(design, trusted, inside, tag))

    for st in design.stmts:
        if st.scope in cand_scopes or (st.label is not None and st.label in chk.owned):
            chk.check(st)
        elif unit_code_extra and (st.scope, st.segment) in unit_code_extra:
            chk.check(st)
    for st in unit_extra:
        chk.check(st)
    return chk.findings


def _check_harness_nets(chk: _Checker, model: HarnessModel, now: dict[str, dict[str, str]]) -> None:
    """Every harness net is driven as in the calibration: no second driver (a resolver where
    there was none), no new driver on an undriven net. Nets that carry the design's own
    outputs are the design's to drive and are not compared."""
    for path, nets in model.nets.items():
        have = now.get(path, {})
        for name, want in nets.items():
            if driven_by_dut(want) or name not in have or have[name] == want:
                continue
            where = f"{path}.{name}".replace("_TAG", "").replace("TAG", "*")
            chk.add(
                "tamper:harness_changed",
                f"the design drives `{where}` of the harness (a continuous assignment, gate "
                "or pull on a testbench or reference net)",
            )
            return


def _trusted_scopes(
    design: Design, inside: set[str], model: HarnessModel, tag: str | None
) -> tuple[set[str], list[str]]:
    """The harness's scopes in this compile: same kind and path as in the calibration, under
    a trusted parent (so an escaped name such as `\\tb.good1 ` does not pass for one), and
    the paths that now appear more than once."""
    memo: dict[str, bool] = {}

    def ok(lab: str, depth: int = 0) -> bool:
        if lab not in memo:
            s = design.scopes[lab]
            path = _masked(s.path, tag)
            memo[lab] = (
                lab not in inside
                and depth < 256
                and model.kinds.get(path) == s.kind
                and (s.parent is None or (s.parent in design.scopes and ok(s.parent, depth + 1)))
            )
        return memo[lab]

    trusted = {lab for lab in design.scopes if ok(lab)}
    seen = Counter(_masked(design.scopes[lab].path, tag) for lab in trusted)
    return trusted, sorted(p for p, n in seen.items() if n > 1)


def _segments_with_hashes(
    design: Design, unit: set[str], hashes: set[str], tag: str | None
) -> set[tuple[str, int]]:
    segs = code_segments(design, unit, tag)
    return {k for k, text in segs.items() if segment_hash(text) in hashes}


__all__ = [
    "ALLOWED_SYSTEM_FUNCTIONS",
    "FORBIDDEN_TASKS",
    "Finding",
    "HarnessModel",
    "find_dut",
    "forbidden_constructs",
    "harness_model",
    "has_module",
    "screen",
    "strip_comments_and_strings",
]
