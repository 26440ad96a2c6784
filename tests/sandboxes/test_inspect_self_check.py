"""Inspect AI's own sandbox conformance suite (`inspect_ai.util._sandbox.self_check`, 44
checks in inspect-ai 0.3.285) against our sandbox `bwrap`, collected the way Inspect's runner
does: the checks by `import *`, beside a function-scoped `sandbox_env` fixture.

Exemptions (docs/inspect.md, "The bwrap sandbox"): only the checks that run commands as
another user, which our security model refuses. Each is a strict xfail, so a check that
starts passing (or a new exemption) fails this file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from inspect_ai.util import SandboxUserUnsupportedError
from inspect_ai.util._sandbox import self_check
from inspect_ai.util._sandbox.self_check import *  # noqa: F403

from sandboxes.inspect_sandbox import BwrapConfig, BwrapSandboxEnvironment

EXEMPT = {
    "test_exec_as_user": (
        "runs `adduser` and `whoami` as root: our sandboxes run every command as one "
        "unprivileged uid and refuse user='root' (SandboxUserUnsupportedError)"
    ),
}


@pytest.fixture
async def sandbox_env(request: pytest.FixtureRequest) -> AsyncIterator[BwrapSandboxEnvironment]:
    why = EXEMPT.get(request.node.originalname)
    if why is not None:
        request.node.add_marker(
            pytest.mark.xfail(reason=why, strict=True, raises=SandboxUserUnsupportedError)
        )
    envs = await BwrapSandboxEnvironment.sample_init("self_check", BwrapConfig(), {})
    env = envs["default"]
    assert isinstance(env, BwrapSandboxEnvironment)
    try:
        yield env
    finally:
        await BwrapSandboxEnvironment.sample_cleanup("self_check", None, envs, False)


def test_the_suite_is_the_one_we_count() -> None:
    # 44 checks in 0.3.285: a new inspect-ai with more (or fewer) checks changes the count
    # in docs/inspect.md, so it must be looked at, not silently absorbed.
    assert len(self_check.__all__) == 44, sorted(self_check.__all__)
    assert set(EXEMPT) <= set(self_check.__all__)
