"""Built-in benchmark suites; each registers itself with codegen_eval.registry."""

__all__: list[str] = []
