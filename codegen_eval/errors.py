"""The exceptions codegen_eval raises on purpose, drawn in one place.

Every one derives from `CodegenEvalError`, so `except CodegenEvalError` catches exactly what
this package means to raise; each also keeps the builtin base it had (ValueError for bad
input, RuntimeError for a failed step, KeyError for a missing name), so older `except`
clauses still work. The classes live beside the code that raises them and are listed here:

    CodegenEvalError
    ├── CliError                    cli_inputs      bad command-line input (one line, exit 2)
    ├── RunAborted                  runner          the run cannot go on (a dead model server)
    ├── UnknownSuiteError           registry        no suite of that name (also a KeyError)
    ├── bad input (also ValueError)
    │   ├── SamplesFileError        solvers         a --samples file that cannot be read
    │   ├── SolverOptionError       run_options     a --solver-opt the solver lacks
    │   ├── SelectionError          selection       options that select no problem
    │   ├── LogFormatError          records         a log line that is not a record
    │   ├── PragmaSyntaxError       suites/omp_pragma/pragma
    │   ├── VvpSyntaxError          suites/verilog/vvp
    │   ├── ResumeConflict          run_options     --resume with other options
    │   ├── Forbidden, ScreenSyntaxError  suites/_ctokens  a screened answer refused
    │   ├── UnsupportedTestbench    readers/verilogeval, readers/rtllm
    │   ├── ReportError             readers/cvdp    a JUnit report that does not read
    │   └── <Reader>FormatError     readers/*       a file not in upstream's layout
    │       (HumanEval, ParEval, VerilogEval, CVDP, RTLLM, MPIrigen)
    ├── TaskOptionError             inspect_tasks   a bad -T option (also Inspect's
    │                                               PrerequisiteError: one line)
    ├── ToolchainMissing            suites/verilog  (also FileNotFoundError)
    └── a step of ours failed (also RuntimeError)
        ├── TrustedBuildError       trusted_cache   our own harness did not build
        ├── HarnessSetupError       readers/cvdp    the cocotb runtime is missing
        ├── SlurmError, SlurmUnavailable  executors/slurm_client
        ├── SlurmStepError          kernelgym/distributed
        └── BugSetupError, UnsupportedBug  kernelgym/kbench  a bug that cannot run here

tests/codegen_eval/test_errors.py checks that every public exception class of the package
is in the tree.

Not in the tree on purpose: the HumanEval checker's `ProtocolError` and `CandidateError`
(readers/humaneval/rpc_*.py) run standalone inside the sandbox and import nothing of ours.
A scorer never lets an exception decide a candidate's verdict: the runner records any
exception from `score()` as `infra_error` for that candidate and goes on.
"""

from __future__ import annotations


class CodegenEvalError(Exception):
    """The root of every exception codegen_eval raises on purpose."""


class CliError(CodegenEvalError):
    """Bad input to the command line: shown as one line `PROG: error: ...`, exit code 2."""
