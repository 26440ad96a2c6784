"""codegen_eval: benchmarks that score LLM-generated parallel and hardware code on real
toolchains. See docs/codegen-eval.md.

    from codegen_eval import get_suite, GenerateSolver, RunConfig, run_eval_sync
    result = run_eval_sync([get_suite("verilog")], GenerateSolver("local"), "runs/v.jsonl",
                           RunConfig(n=5, ks=(1, 5)))
"""

from codegen_eval.cache import ScoreCache, code_hash
from codegen_eval.extract import Extraction, extract_code
from codegen_eval.failures import (
    classify_compile,
    classify_compile_result,
    classify_exec,
    detect_sanitizer,
)
from codegen_eval.log import LogFormatError, RunLog, read_log
from codegen_eval.metrics import (
    efficiency_at_k,
    expected_max_of_k,
    failure_table,
    mean_pass_at_k,
    pass_at_k,
    speedup_at_k,
)
from codegen_eval.registry import get_suite, list_suites, register_suite
from codegen_eval.report import print_table, render_html, report_from_logs, summarize
from codegen_eval.runner import RunAborted, RunConfig, RunResult, run_eval, run_eval_sync
from codegen_eval.solvers import FileSolver, GenerateSolver, ReferenceSolver
from codegen_eval.types import (
    Candidate,
    FailureClass,
    ReaderFacts,
    Sample,
    Score,
    Scorer,
    ScoreStatus,
    Solver,
    Task,
)

__all__ = [
    "Candidate",
    "Extraction",
    "FailureClass",
    "FileSolver",
    "GenerateSolver",
    "LogFormatError",
    "ReaderFacts",
    "ReferenceSolver",
    "RunAborted",
    "RunConfig",
    "RunLog",
    "RunResult",
    "Sample",
    "Score",
    "ScoreCache",
    "ScoreStatus",
    "Scorer",
    "Solver",
    "Task",
    "classify_compile",
    "classify_compile_result",
    "classify_exec",
    "code_hash",
    "detect_sanitizer",
    "efficiency_at_k",
    "expected_max_of_k",
    "extract_code",
    "failure_table",
    "get_suite",
    "list_suites",
    "mean_pass_at_k",
    "pass_at_k",
    "print_table",
    "read_log",
    "register_suite",
    "render_html",
    "report_from_logs",
    "run_eval",
    "run_eval_sync",
    "speedup_at_k",
    "summarize",
]
