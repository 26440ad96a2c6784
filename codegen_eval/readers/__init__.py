"""Readers for public benchmark formats, from files the user already has (nothing is
downloaded). VerilogEval readers live with the verilog suite."""

from codegen_eval.readers.humaneval import HumanEvalScorer, load_humaneval
from codegen_eval.readers.pareval import KNOWN_BAD, ParEvalScorer, load_pareval

__all__ = ["KNOWN_BAD", "HumanEvalScorer", "ParEvalScorer", "load_humaneval", "load_pareval"]
