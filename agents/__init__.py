"""APPL programs that generate and repair parallel/HDL code, and the kernel-crash agent."""

__all__: list[str] = []
