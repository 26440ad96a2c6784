"""Named toolchain recipes: sources -> compile command -> artifact -> run command, with
per-language default limits and parsed diagnostics.

    recipe = toolchains.get("openmp")
    build = await recipe.compile(sb, sources={"main.c": src}, output="main")
    if build.ok:
        r = await recipe.run(sb, build.artifact, threads=2)

Recipes: c, cpp, openmp, mpi, cuda, verilog-iverilog, verilog-verilator. Every compile
result carries the tool versions (looked up once per process on the host, whose /usr the
sandbox sees read-only).
"""

from __future__ import annotations

from .diagnostics import Diagnostic, parse_gcc, parse_iverilog, parse_nvcc, parse_verilator
from .recipes import (
    CompileResult,
    CRecipe,
    CudaRecipe,
    IverilogRecipe,
    MpiRecipe,
    OpenMPRecipe,
    Recipe,
    VerilatorRecipe,
    tool_version,
)

_RECIPES: dict[str, Recipe] = {
    "c": CRecipe("c"),
    "cpp": CRecipe("cpp", cxx=True),
    "openmp": OpenMPRecipe("openmp"),
    "mpi": MpiRecipe("mpi"),
    "cuda": CudaRecipe("cuda"),
    "verilog-iverilog": IverilogRecipe("verilog-iverilog"),
    "verilog-verilator": VerilatorRecipe("verilog-verilator"),
}


def get(name: str) -> Recipe:
    try:
        return _RECIPES[name]
    except KeyError:
        raise KeyError(f"unknown toolchain {name!r}; known: {', '.join(_RECIPES)}") from None


def names() -> list[str]:
    return list(_RECIPES)


__all__ = [
    "CRecipe",
    "CompileResult",
    "CudaRecipe",
    "Diagnostic",
    "IverilogRecipe",
    "MpiRecipe",
    "OpenMPRecipe",
    "Recipe",
    "VerilatorRecipe",
    "get",
    "names",
    "parse_gcc",
    "parse_iverilog",
    "parse_nvcc",
    "parse_verilator",
    "tool_version",
]
