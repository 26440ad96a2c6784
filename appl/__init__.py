"""appl"""

__all__: list[str] = []
