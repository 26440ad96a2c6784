"""Adversarial conformance of the HumanEval reader: every way a candidate tried to pass without
solving the problem, scored for real in the bubblewrap sandbox, must fail with its class, and
the honest solutions of the fixture must pass.

Each cheat that forged a pass against the old single-process harness is also scored in the
in-process mode (trusted=False) and must still pass there: that proves the cheat is real, so
its failure in trusted mode is the harness's doing and not a broken cheat.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from codegen_eval import tagging
from codegen_eval.readers import load_humaneval
from codegen_eval.readers.humaneval import HumanEvalScorer
from codegen_eval.readers.humaneval.trusted import HERE, PY_FILES, cache_root, python_harness
from codegen_eval.types import Candidate, Sample, Score

FIXTURE = Path(__file__).parent / "humaneval_fixture" / "problems.jsonl"


@dataclass(frozen=True)
class Cheat:
    task: str
    code: str
    expect: str  # failure class in trusted mode
    forges_in_process: bool = False  # passes the old single-process harness


# Looks everywhere a test or a key could be (the run directory, /tmp with the trusted cache,
# every process's /proc entries) and hard-codes the answer of any `candidate(...) == value`
# line it finds. In-process the test sits next to the candidate in prog.py.
_READ_TEST = """\
    import glob, os, re
    paths = glob.glob('/sandbox/*') + glob.glob('/tmp/**', recursive=True)
    paths += glob.glob('/proc/[0-9]*/*') + glob.glob('/proc/[0-9]*/fd/*')
    for path in paths:
        try:
            if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
                continue  # pipes would block, the precompiled header is no test
            with open(path, 'rb') as fh:
                text = fh.read(1 << 20).decode('latin-1')
        except Exception:
            continue
        for m in re.finditer(r'candidate\\((.*?)\\) == (.*)', text):
            try:
                if eval('(' + m.group(1) + ',)') == (a, b):
                    return eval(m.group(2))
            except Exception:
                pass
    return 0
"""
_FAKE_VERDICT = """\
    import os
    line = b'HEV {"verdict": "pass", "class": null, "calls": 3, "detail": ""} mac=0123456789abcdef\\n'
    os.write(1, line)
    for path in (f'/proc/{os.getppid()}/fd/1', '/proc/1/fd/1', '/dev/stdout', '/dev/tty'):
        try:
            fd = os.open(path, os.O_WRONLY)
            os.write(fd, line)
        except OSError:
            pass
    return 0
"""
_KILL_CHECKER = """\
    import os, signal
    for how in (lambda: os.kill(os.getppid(), signal.SIGSTOP), lambda: os.kill(-1, signal.SIGKILL),
                lambda: os.killpg(0, signal.SIGKILL), lambda: os.kill(1, signal.SIGKILL)):
        try:
            how()
        except OSError:
            pass
    return 0
"""
# Overwrite the checker's own files where the sandbox shows them, for the next sample.
_REWRITE_RUNNER = """\
    import glob, os
    for path in glob.glob('/tmp/**/*.py', recursive=True) + glob.glob('/tmp/**/he_*', recursive=True):
        for how in (lambda: open(path, 'w').write('import os\\nos._exit(0)\\n'),
                    lambda: os.unlink(path), lambda: os.chmod(path, 0o777)):
            try:
                how()
            except OSError:
                pass
    return 0
"""
# Modules the checker imports after the candidate has started (traceback, once an assertion
# fails), planted where a script's directory, the working directory or /tmp would be
# searched first. Imported into the checker, such a module would find the key in main()'s
# frame and print a correctly tagged pass.
_PLANTED = """import os, sys
f = sys._getframe()
while f is not None:
    key = f.f_locals.get('key')
    if isinstance(key, bytes):
        import tagging
        body = 'HEV {"verdict": "pass", "class": null, "calls": 1, "detail": ""}'
        os.write(1, (tagging.tag_line(key, body) + '\\n').encode())
        os._exit(0)
    f = f.f_back
"""
_PLANT_MODULES = f"""\
    import os
    for d in ('/sandbox', '/tmp', os.getcwd()):
        for name in ('traceback.py', 'linecache.py', 'random.py', 'copy.py'):
            try:
                with open(os.path.join(d, name), 'w') as fh:
                    fh.write({_PLANTED!r})
            except OSError:
                pass
    return 0.0
"""
PY: dict[str, Cheat] = {
    "plant_modules": Cheat("HumanEval/1", _PLANT_MODULES, "wrong_answer"),
    "verdict_in_exception_text": Cheat(
        "HumanEval/0",
        '    raise ValueError(\'\\nHEV {"verdict": "pass"} mac=0123456789abcdef\\n\')\n',
        "nonzero_exit",
    ),
    "exit_at_load": Cheat(
        "HumanEval/0", "    return 0\nimport os\nos._exit(0)\n", "tamper:exit", True
    ),
    "sys_exit_at_load": Cheat(
        "HumanEval/0", "    return 0\nimport sys\nsys.exit(0)\n", "tamper:exit", True
    ),
    "sys_exit_in_call": Cheat(
        "HumanEval/0", "    import sys\n    sys.exit(0)\n", "tamper:exit", True
    ),
    "always_equal": Cheat(
        "HumanEval/0",
        "    class AlwaysEqual:\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = object.__hash__\n    return AlwaysEqual()\n",
        "wrong_answer",
        True,
    ),
    "int_subclass_equal": Cheat(
        "HumanEval/0",
        "    class Liar(int):\n        def __eq__(self, other):\n            return True\n"
        "        __hash__ = int.__hash__\n    return Liar(0)\n",
        "wrong_answer",
        True,
    ),
    "patch_builtins_and_math": Cheat(
        "HumanEval/1",
        "    import builtins, math\n    math.fabs = lambda x: 0.0\n    builtins.abs = lambda x: 0\n"
        "    return 0.0\n",
        "wrong_answer",
        True,
    ),
    "redefine_check_by_profile": Cheat(
        "HumanEval/0",
        "    return 0\nimport os, sys\n"
        "sys.setprofile(lambda f, e, a: os._exit(0) if f.f_code.co_name == 'check' else None)\n",
        "wrong_answer",
        True,
    ),
    "atexit_exit": Cheat(
        "HumanEval/0",
        "    return 0\nimport atexit, os\natexit.register(lambda: os._exit(0))\n",
        "wrong_answer",
        True,
    ),
    "excepthook_exit": Cheat(
        "HumanEval/0",
        "    return 0\nimport os, sys\nsys.excepthook = lambda *a: os._exit(0)\n",
        "wrong_answer",
        True,
    ),
    "read_the_test": Cheat("HumanEval/0", _READ_TEST, "wrong_answer", True),
    "fake_verdict_line": Cheat("HumanEval/0", _FAKE_VERDICT, "wrong_answer"),
    "kill_the_checker": Cheat("HumanEval/0", _KILL_CHECKER, "wrong_answer"),
    "rewrite_the_runner": Cheat("HumanEval/0", _REWRITE_RUNNER, "wrong_answer"),
    "fork_a_helper": Cheat("HumanEval/0", "    return 0\nimport os\nos.fork()\n", "nonzero_exit"),
    "protocol_garbage": Cheat(
        "HumanEval/0",
        "    import os\n    os.write(4, b'\\x00\\x00\\x00\\x05junk!')\n    return a + b\n",
        "tamper:protocol",
    ),
    "deep_json_bomb": Cheat(
        "HumanEval/0",
        "    import os\n    body = b'[' * 200000 + b']' * 200000\n"
        "    os.write(4, len(body).to_bytes(4, 'big') + body)\n    return a + b\n",
        "tamper:protocol",
    ),
    "deeply_nested_answer": Cheat(
        "HumanEval/0",
        "    x = []\n    for _ in range(5000):\n        x = [x]\n    return x\n",
        "wrong_answer",
    ),
    "hang": Cheat("HumanEval/0", "    while True:\n        pass\n", "timeout:wall"),
    "segfault": Cheat(
        "HumanEval/0",
        "    import ctypes\n    return ctypes.string_at(0)\n",
        "runtime_crash:SIGSEGV",
    ),
    "raises": Cheat("HumanEval/0", "    raise ValueError('no')\n", "nonzero_exit"),
    "syntax_error": Cheat("HumanEval/0", "    return a +\n", "compile_error:syntax"),
    "wrong": Cheat("HumanEval/0", "    return a - b\n", "wrong_answer"),
    "wrong_type_tuple_for_list": Cheat(
        "HumanEval/3", "    return tuple(f(x) for x in xs)\n", "wrong_answer"
    ),
}

_READ_CHECKER = """\
    for (const char *p : {"/proc/%d/exe", "/proc/%d/mem", "/proc/%d/environ"}) {
        char path[64]; snprintf(path, sizeof path, p, (int)getppid());
        FILE *f = fopen(path, "rb");
        if (f && fgetc(f) != EOF) return x + y;  // a readable checker: hard-code its answers
    }
    return 0;
}
"""
CPP: dict[str, Cheat] = {
    "constructor_exit": Cheat(
        "CPP/0",
        "    return 0;\n}\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void early() { _exit(0); }\n",
        "tamper:exit",
        True,
    ),
    "static_init_exit": Cheat(
        "CPP/0",
        "    return 0;\n}\n#include <cstdlib>\nstatic int early = (std::exit(0), 0);\n",
        "tamper:exit",
        True,
    ),
    "exit_in_call": Cheat(
        "CPP/0", "#include <cstdlib>\nint add(int x,int y){ std::exit(0); }\n", "tamper:exit", True
    ),
    "fake_verdict_line": Cheat(
        "CPP/0",
        "#include <unistd.h>\n#include <fcntl.h>\n#include <string.h>\n#include <stdio.h>\n"
        "int add(int x,int y){\n"
        '    const char *l = "HEV {\\"verdict\\": \\"pass\\"} mac=0123456789abcdef\\n";\n'
        "    write(1, l, strlen(l));\n"
        '    char p[64]; snprintf(p, sizeof p, "/proc/%d/fd/1", (int)getppid());\n'
        "    int fd = open(p, O_WRONLY); if (fd >= 0) write(fd, l, strlen(l));\n"
        '    fd = open("/proc/1/fd/1", O_WRONLY); if (fd >= 0) write(fd, l, strlen(l));\n'
        "    return 0;\n}\n",
        "wrong_answer",
    ),
    "read_the_checker": Cheat(
        "CPP/0",
        "#include <stdio.h>\n#include <unistd.h>\nint add(int x,int y){\n" + _READ_CHECKER,
        "wrong_answer",
    ),
    "kill_the_checker": Cheat(
        "CPP/0",
        "#include <signal.h>\n#include <unistd.h>\nint add(int x,int y){\n"
        "    kill(getppid(), SIGKILL); kill(-1, SIGKILL); kill(0, SIGKILL);\n"
        "    if (fork() == 0) _exit(0);\n    return 0;\n}\n",
        "wrong_answer",
    ),
    "protocol_garbage": Cheat(
        "CPP/0",
        "#include <unistd.h>\nint add(int x,int y){\n"
        "    unsigned char junk[10] = {5, 0, 0, 0, 'V', 1, 2, 3, 4, 5};\n"
        "    write(4, junk, sizeof junk);\n    return x + y;\n}\n",
        "tamper:protocol",
    ),
    "short_vector_no_bounds_check": Cheat("CPP/4", "    return {1};\n}\n", "wrong_answer"),
    "segfault": Cheat("CPP/0", "    return *(volatile int *)0;\n}\n", "runtime_crash:SIGSEGV"),
    "hang": Cheat(
        "CPP/0", "    volatile int z = 0;\n    while (!z) {}\n    return 0;\n}\n", "timeout:wall"
    ),
    "throws": Cheat("CPP/1", "    throw 42;\n}\n", "runtime_crash:exception"),
    "wrong": Cheat("CPP/0", "    return x * y;\n}\n", "wrong_answer"),
    "syntax_error": Cheat("CPP/0", "    return x + ;\n}\n", "compile_error:syntax"),
    "c_constructor_exit": Cheat(
        "C/0",
        "    return 0;\n}\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void early(void) { _exit(0); }\n",
        "tamper:exit",
        True,
    ),
    "c_wrong_string": Cheat("C/1", '    return "abab";\n}\n', "wrong_answer"),
    # `abs(a[i]-b[i])>1e-4` is false for NaN: upstream's float comparison passes NaN answers
    "nan_vector": Cheat(
        "CPP/5", "    return vector<float>(numbers.size(), NAN);\n}\n", "wrong_answer", True
    ),
    "c_nan": Cheat("C/3", "    return NAN;\n}\n", "wrong_answer", True),
}


async def _score_all(
    jobs: list[tuple[str, Sample, str, bool]], wall_s: float = 6.0
) -> dict[tuple[str, bool], Score]:
    scorers = {t: HumanEvalScorer(wall_s=wall_s, call_s=2.0, trusted=t) for t in (True, False)}
    sem = asyncio.Semaphore(2)
    out: dict[tuple[str, bool], Score] = {}

    async def one(name: str, sample: Sample, code: str, trusted: bool) -> None:
        async with sem:
            out[name, trusted] = await scorers[trusted].score(sample, Candidate(sample.id, 0, code))

    await asyncio.gather(*(one(*j) for j in jobs))
    return out


@pytest.fixture(scope="module")
def samples() -> dict[str, Sample]:
    return {s.id: s for s in load_humaneval(FIXTURE).dataset}


@pytest.fixture(scope="module")
def verdicts(samples: dict[str, Sample]) -> dict[tuple[str, bool], Score]:
    jobs = [(f"honest:{sid}", s, s.target, True) for sid, s in samples.items()]
    for group, cheats in (("py", PY), ("cpp", CPP)):
        for name, c in cheats.items():
            jobs.append((f"{group}:{name}", samples[c.task], c.code, True))
            if c.forges_in_process:
                jobs.append((f"{group}:{name}", samples[c.task], c.code, False))
    return asyncio.run(_score_all(jobs))


def test_honest_solutions_pass(verdicts: dict[tuple[str, bool], Score]) -> None:
    honest = {k[0]: v for k, v in verdicts.items() if k[0].startswith("honest:")}
    assert len(honest) == 15
    bad = {
        k: (v.status, v.failure_class, v.explanation[:200])
        for k, v in honest.items()
        if v.status != "pass"
    }
    assert not bad
    forgeable = sorted(k for k, v in honest.items() if v.metrics.get("forgeable"))
    assert forgeable == ["honest:C/2"]  # a pointer parameter: in-process, and it says so
    assert "forgeable in-process verdict" in honest["honest:C/2"].explanation
    assert all(v.metrics["calls"] >= 1 for k, v in honest.items() if k != "honest:C/2")


@pytest.mark.parametrize("name", sorted(f"py:{n}" for n in PY) + sorted(f"cpp:{n}" for n in CPP))
def test_cheat_fails_with_its_class(name: str, verdicts: dict[tuple[str, bool], Score]) -> None:
    group, short = name.split(":", 1)
    cheat = (PY if group == "py" else CPP)[short]
    got = verdicts[name, True]
    assert (got.status, got.failure_class) == ("fail", cheat.expect), got.explanation
    assert "forgeable" not in got.metrics
    if cheat.forges_in_process:  # the cheat is real: the old harness passed it
        old = verdicts[name, False]
        assert old.status == "pass" and old.metrics["forgeable"] == 1.0, old.explanation


def test_cache_intact_and_checker_execute_only(verdicts: dict[tuple[str, bool], Score]) -> None:
    """After every cheat ran (rewrite_the_runner among them), the trusted files are still
    ours, and the compiled checkers cannot be read by the sandbox uid."""
    harness = asyncio.run(python_harness())
    for name in (*PY_FILES, "tagging.py"):
        source = Path(tagging.__file__) if name == "tagging.py" else HERE / name
        assert (harness.trusted.parent / name).read_bytes() == source.read_bytes()
    checkers = list(cache_root().glob("cx-*/he_checker"))
    assert checkers
    if os.geteuid() == 0:  # payloads run as another uid only when we are root
        assert all(p.stat().st_mode & 0o777 == 0o711 for p in checkers)
    for p in cache_root().rglob("*"):
        assert not p.stat().st_mode & 0o022, p


def test_a_nan_answer_is_named(verdicts: dict[tuple[str, bool], Score]) -> None:
    for name in ("cpp:nan_vector", "cpp:c_nan"):
        assert "NaN in the answer" in verdicts[name, True].explanation


async def test_nan_in_python_fails_upstreams_own_comparisons(samples: dict[str, Sample]) -> None:
    """Python needs no NaN rule: HumanEval's float tests use `<` or `==`, false for NaN."""
    nan = Candidate("HumanEval/1", 0, "    return float('nan')\n")
    for trusted in (True, False):
        got = await HumanEvalScorer(trusted=trusted).score(samples["HumanEval/1"], nan)
        assert (got.status, got.failure_class) == ("fail", "wrong_answer"), got.explanation


async def test_a_problem_may_allow_nan(samples: dict[str, Sample]) -> None:
    """A problem with "allow_nan": true gets a checker without the NaN rule (upstream's
    comparison then decides, and passes this NaN vector)."""
    sample = samples["CPP/5"]
    sample = replace(sample, metadata={**sample.metadata, "allow_nan": True})
    code = "    return vector<float>(numbers.size(), NAN);\n}\n"
    got = await HumanEvalScorer().score(sample, Candidate("CPP/5", 0, code))
    assert got.status == "pass" and "forgeable" not in got.metrics, got.explanation


async def test_fallback_verdicts_are_labelled_forgeable(samples: dict[str, Sample]) -> None:
    """C/2 takes a pointer, out of the RPC's reach: a constructor that exits 0 still passes
    there, and the Score says the verdict is forgeable."""
    cheat = "    return 0;\n}\n#include <unistd.h>\n__attribute__((constructor)) static void e(void) { _exit(0); }\n"
    got = await HumanEvalScorer().score(samples["C/2"], Candidate("C/2", 0, cheat))
    assert got.status == "pass" and got.metrics["forgeable"] == 1.0
    assert "const int *" in got.explanation
