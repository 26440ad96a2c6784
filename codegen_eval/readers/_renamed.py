"""The readers' old spelling of the backend keyword, kept for one version.

Every Python API names the sandbox backend `backend` (docs/architecture.md, "One word per
concept"); the HumanEval and ParEval readers said `sandbox`. Users' code that still says
`sandbox=` keeps working, with a DeprecationWarning that names the new keyword.
"""

from __future__ import annotations

import warnings


def backend_keyword(backend: str | None, sandbox: str | None, where: str) -> str | None:
    """`backend`, or the value given under the deprecated `sandbox=` (warned, at the caller's
    caller: the user's line). Both given and different is a TypeError, never a silent pick."""
    if sandbox is None:
        return backend
    warnings.warn(
        f"{where}(sandbox=...) is deprecated: say backend={sandbox!r} (the same sandbox "
        "backend name)",
        DeprecationWarning,
        stacklevel=3,
    )
    if backend is not None and backend != sandbox:
        raise TypeError(f"{where}: backend={backend!r} and sandbox={sandbox!r} disagree")
    return sandbox
