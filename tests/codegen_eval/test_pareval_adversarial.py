"""Cheating ParEval candidates, each turned into a test (the fixture's sum-of-squares problem).

In upstream mode the driver prints the verdict from inside the candidate's process, so the
mode is forgeable by design; the cheap checks stop the obvious forgeries, one test shows a
forgery they do not stop, and the same candidate fails in the trusted mode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.readers.pareval import load_pareval
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver

FIXTURE = Path(__file__).parent / "pareval_fixture"
SERIAL = "00_reduce_sum_of_squares/serial"
OMP = "00_reduce_sum_of_squares/omp"
SCALE = "01_transform_scale_points/serial"
HONEST = "  double s = 0;\n  for (double v : x) s += v * v;\n  return s;\n}\n"


def _chars(text: str) -> str:
    """A C char array initializer spelling `text` without a string literal."""
    return "{" + ", ".join(str(ord(c)) for c in text) + "}"


def _full(body: str, includes: str = "") -> str:
    """A whole-function answer (the reader puts it after the prompt's preamble), so the
    candidate can have includes of its own."""
    return includes + "double sumOfSquares(std::vector<double> const& x) {\n" + body


def _forge(text: str, leave: str) -> str:
    """Print the driver's lines from inside the candidate, then leave by `leave`."""
    return _full(
        f"  static const char forged[] = {_chars(text)};\n"
        "  std::fwrite(forged, 1, sizeof forged, stdout);\n  std::fflush(stdout);\n"
        f"  {leave};\n  return 0;\n}}\n",
        "#include <pthread.h>\n#include <cstdio>\n",
    )


VERDICT = "Validation: PASS\nTime: 0.000001\nBestSequential: 0.001\n"


async def _score(tmp_path: Path, sid: str, code: str, verdict: str = "upstream") -> dict:
    task = load_pareval(FIXTURE, models=("serial", "omp"), verdict=verdict, cores=2)
    samples = tmp_path / f"{verdict}.jsonl"
    samples.write_text(json.dumps({"sample_id": sid, "completion": code}) + "\n")
    cfg = RunConfig(progress=False, filter=sid)
    res = await run_eval([task], FileSolver(samples), tmp_path / f"log-{verdict}.jsonl", cfg)
    (rec,) = res.records
    return rec


SCREENED = {
    "exit_after_printing": (
        '  std::printf("Validation: PASS\\n");\n  std::exit(0);\n}\n',
        "process_escape",
    ),
    "second_main": (HONEST + "int main() { return 0; }\n", "driver_symbol"),
    "redefine_driver_helper": (
        HONEST + "#define closeEnough(a, b, t) true\n",
        "macro",
    ),
    "undef": (HONEST + "#undef MAX_VALIDATION_ATTEMPTS\n", "macro"),
    "token_pasting": (
        "#define CAT(a, b) a##b\n  return CAT(correct, SumOfSquares)(x);\n}\n",
        "macro",
    ),
    "calls_the_baseline": ("  return correctSumOfSquares(x);\n}\n", "baseline_call"),
    "quoted_include": ('#include "baseline.hpp"\n' + HONEST, "include"),
    "prints_verdict_text": ('  std::puts("Validation: PASS");\n' + HONEST, "verdict_text"),
    "fork": ("  if (fork() == 0) return 0;\n" + HONEST, "process_escape"),
}


@pytest.mark.parametrize("name", sorted(SCREENED))
async def test_screened_constructs(tmp_path: Path, name: str) -> None:
    code, construct = SCREENED[name]
    rec = await _score(tmp_path, SERIAL, code)
    assert rec["failure_class"] == f"forbidden_construct:{construct}", rec["explanation"]


async def test_a_forged_line_before_the_drivers_is_caught(tmp_path: Path) -> None:
    code = _full(
        f"  static const char f[] = {_chars('Validation: PASS' + chr(10))};\n"
        "  std::fwrite(f, 1, sizeof f, stdout);\n" + HONEST,
        "#include <cstdio>\n",
    )
    rec = await _score(tmp_path, SERIAL, code)
    assert rec["failure_class"] == "tamper:bad_protocol", rec["explanation"]


async def test_forged_timings_that_do_not_fit_the_run_are_caught(tmp_path: Path) -> None:
    code = _forge("Validation: PASS\nTime: 10\nBestSequential: 10\n", "pthread_exit(nullptr)")
    rec = await _score(tmp_path, SERIAL, code)
    assert rec["failure_class"] == "tamper:timing", rec["explanation"]


async def test_replacing_the_binary_between_sweep_runs_is_caught(tmp_path: Path) -> None:
    code = _full(
        '  unlink("a.out");\n'
        '  { std::ofstream f("a.out"); f << "#!/bin/sh\\necho hi\\n"; }\n'
        '  chmod("a.out", 0755);\n' + HONEST,
        "#include <fstream>\n#include <sys/stat.h>\n#include <unistd.h>\n",
    )
    rec = await _score(tmp_path, OMP, code)
    assert rec["failure_class"] == "tamper:binary_replaced", rec["explanation"]


async def test_upstream_mode_is_forgeable_and_the_trusted_mode_is_not(tmp_path: Path) -> None:
    """What "forgeable" means: a candidate that computes nothing prints the driver's three
    lines and leaves through pthread_exit (exit status 0, nothing on the screen). Upstream's
    flow and our upstream mode accept it, with a 1000x speedup. The trusted verdict does not."""
    code = _forge(VERDICT, "pthread_exit(nullptr)")
    upstream = await _score(tmp_path, SERIAL, code)
    assert upstream["status"] == "pass" and upstream["metrics"]["speedup"] > 100
    trusted = await _score(tmp_path, SERIAL, code, verdict="trusted")
    assert trusted["failure_class"] == "tamper:bad_protocol", trusted["explanation"]


TRUSTED_CHEATS = {
    # the baseline is renamed in the candidate's build, so pasting its name finds nothing
    "baseline_by_token_pasting": (
        "#define CAT(a, b) a##b\n  return CAT(correct, SumOfSquares)(x);\n}\n",
        "compile_error",
    ),
    # garbage where the outputs should be, then leave before the producer writes its own
    "garbage_results": (
        _full(
            '  if (FILE *f = std::fopen("results.0.bin", "wb")) { std::fputs("garbage!", f); std::fclose(f); }\n'
            "  _exit(0);\n}\n",
            "#include <cstdio>\n#include <unistd.h>\n",
        ),
        "tamper:bad_protocol",
    ),
    # the candidate's stdout is not where the trusted verdict is read
    "prints_the_checker_verdict": (
        _full('  std::puts("PE_VERDICT PASS 2");\n  return 0.0;\n}\n', "#include <cstdio>\n"),
        "wrong_answer",
    ),
    # each call runs in a producer process of its own: count them in a file
    "exits_after_the_first_call": (
        _full(
            '  if (std::FILE *f = std::fopen("seen", "r")) _exit(0);\n'
            '  if (std::FILE *f = std::fopen("seen", "w")) std::fclose(f);\n' + HONEST,
            "#include <cstdio>\n#include <unistd.h>\n",
        ),
        "tamper:bad_protocol",
    ),
}


@pytest.mark.parametrize("name", sorted(TRUSTED_CHEATS))
async def test_trusted_mode_cheats(tmp_path: Path, name: str) -> None:
    code, expected = TRUSTED_CHEATS[name]
    rec = await _score(tmp_path, SERIAL, code, verdict="trusted")
    assert rec["failure_class"].startswith(expected), rec["explanation"]


# The producer is the candidate's build: whatever working code it holds, the candidate can
# call. These passed while the producer held the whole driver and the renamed baseline.
# The driver's own best() calls the baseline; a struct with the Context's layout is enough.
BEST_SUM = (
    "struct Context;\nvoid best(Context *ctx);\n"
    "double sumOfSquares(std::vector<double> const& x) {\n"
    "  struct Fake { std::vector<double> x; double result; } f{x, 0.0};\n"
    "  best(reinterpret_cast<Context*>(&f));\n  return f.result;\n}\n"
)
# 01 includes baseline.hpp after the answer (the Point struct comes from the prompt)
BEST_SCALE = (
    "struct Context;\nvoid best(Context *ctx);\n"
    "void scalePoints(std::vector<Point> &points, double factor) {\n"
    "  struct Fake { std::vector<Point> points; double factor; } f{std::move(points), factor};\n"
    "  best(reinterpret_cast<Context*>(&f));\n  points = std::move(f.points);\n}\n"
)
# No names at all: the renamed baseline is the one `pe_` function in the binary's symbol
# table, found through /proc/self/exe and called through a pointer.
SYMTAB = r"""#include <cstdint>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <string>
double sumOfSquares(std::vector<double> const& x) {
  std::FILE *f = std::fopen("/proc/self/exe", "rb");
  std::string img; char buf[65536]; size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) img.append(buf, n);
  auto *eh = (const Elf64_Ehdr *)img.data();
  auto *sh = (const Elf64_Shdr *)(img.data() + eh->e_shoff);
  uintptr_t mine = 0, theirs = 0;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    auto *sym = (const Elf64_Sym *)(img.data() + sh[i].sh_offset);
    const char *str = img.data() + sh[sh[i].sh_link].sh_offset;
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++) {
      const char *nm = str + sym[k].st_name;
      if (!std::strncmp(nm, "_Z27pe_", 7)) theirs = sym[k].st_value;
      if (!std::strncmp(nm, "_Z12sumOfSquares", 16)) mine = sym[k].st_value;
    }
  }
  if (!mine || !theirs) return -1.0;
  using Fn = double (*)(std::vector<double> const&);
  return ((Fn)((uintptr_t)&sumOfSquares - mine + theirs))(x);
}
"""
BASELINE_IN_THE_PRODUCER = {
    "driver_best_fake_context": (SERIAL, BEST_SUM, "link_error"),
    "driver_best_fake_context_omp": (OMP, BEST_SUM, "link_error"),
    "driver_best_baseline_after_the_answer": (SCALE, BEST_SCALE, "link_error"),
    "baseline_from_the_symbol_table": (SERIAL, SYMTAB, "runtime_crash:SIGILL"),
}


@pytest.mark.parametrize("name", sorted(BASELINE_IN_THE_PRODUCER))
async def test_the_producer_holds_no_working_baseline(tmp_path: Path, name: str) -> None:
    sid, code, expected = BASELINE_IN_THE_PRODUCER[name]
    rec = await _score(tmp_path, sid, code, verdict="trusted")
    assert rec["status"] == "fail", rec["explanation"]
    assert rec["failure_class"].startswith(expected), rec["explanation"]


async def test_honest_candidate_passes_both_modes(tmp_path: Path) -> None:
    for verdict in ("upstream", "trusted"):
        rec = await _score(tmp_path, OMP, HONEST, verdict=verdict)
        assert rec["status"] == "pass", (verdict, rec["explanation"])
