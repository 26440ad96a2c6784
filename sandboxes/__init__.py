"""sandboxes"""

__all__: list[str] = []
