"""codegen_eval's exceptions form one tree under CodegenEvalError (codegen_eval/errors.py), and
each keeps the builtin base older callers catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import codegen_eval
from codegen_eval.errors import CliError, CodegenEvalError

# The HumanEval checker's runtime runs standalone inside the sandbox and imports nothing of
# ours (readers/humaneval/trusted.py copies these files), so its errors stay outside the tree.
STANDALONE = {
    "codegen_eval.readers.humaneval.rpc_codec",
    "codegen_eval.readers.humaneval.rpc_trusted",
}


def _public_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(codegen_eval.__path__, "codegen_eval."):
        if info.name in STANDALONE:
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.append(obj)
    return found


def test_every_public_exception_of_the_package_is_under_one_root() -> None:
    found = _public_exceptions()
    assert len(found) >= 25  # the walk really reached the package's modules
    outside = sorted(
        f"{e.__module__}.{e.__qualname__}" for e in found if not issubclass(e, CodegenEvalError)
    )
    assert outside == []


def test_the_root_keeps_the_builtin_bases_callers_catch() -> None:
    from codegen_eval.registry import UnknownSuiteError
    from codegen_eval.runner import RunAborted
    from codegen_eval.solvers import SamplesFileError

    assert issubclass(UnknownSuiteError, KeyError) and issubclass(RunAborted, RuntimeError)
    assert issubclass(SamplesFileError, ValueError) and issubclass(CliError, CodegenEvalError)
