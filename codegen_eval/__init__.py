"""codegen_eval"""

__all__: list[str] = []
