"""Inspect AI's sandbox conformance suite (`inspect_ai.util._sandbox.self_check`) against
`codegen-docker` (sandboxes/inspect_docker.py), our docker backend, with the same one
exemption as `bwrap` (test_inspect_self_check.py, docs/inspect.md). As root the local
engine and the image are made by scripts/docker-local.sh (conftest.docker_local_up)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from inspect_ai.util import SandboxUserUnsupportedError
from inspect_ai.util._sandbox.self_check import *  # noqa: F403

from sandboxes.inspect_docker import CodegenDockerSandboxEnvironment
from sandboxes.inspect_sandbox import BwrapConfig

from .conftest import docker_local_up, marker, processes_with
from .test_inspect_self_check import EXEMPT

# one container per exec: the suite takes minutes here
pytestmark = pytest.mark.slow


@pytest.fixture
async def sandbox_env(
    request: pytest.FixtureRequest,
) -> AsyncIterator[CodegenDockerSandboxEnvironment]:
    why = EXEMPT.get(request.node.originalname)
    if why is not None:
        request.node.add_marker(
            pytest.mark.xfail(reason=why, strict=True, raises=SandboxUserUnsupportedError)
        )
    docker_local_up()
    envs = await CodegenDockerSandboxEnvironment.sample_init("self_check", BwrapConfig(), {})
    env = envs["default"]
    assert isinstance(env, CodegenDockerSandboxEnvironment)
    try:
        yield env
    finally:
        await CodegenDockerSandboxEnvironment.sample_cleanup("self_check", None, envs, False)


async def test_codegen_docker_timeout_kills_the_tree_on_the_host(
    sandbox_env: CodegenDockerSandboxEnvironment,
) -> None:
    # the suite's own check looks with `ps` from a later container, which sees nothing
    m = marker()
    with pytest.raises(TimeoutError):
        await sandbox_env.exec(["sh", "-c", f"sleep {m} & sleep {m}; :"], timeout=2)
    assert processes_with(m) == []
    res = await sandbox_env.exec(["id", "-u"])
    assert res.stdout.strip() not in ("", "0")


async def test_codegen_docker_missing_cwd_is_a_failed_result(
    sandbox_env: CodegenDockerSandboxEnvironment,
) -> None:
    # docker creates a missing working directory, as root, inside our run directory;
    # like bwrap, a missing cwd is a failed result and nothing is created
    for cwd in ("missing", "/tmp/missing", "/sandbox/a/b"):
        res = await sandbox_env.exec(["pwd"], cwd=cwd)
        assert not res.success and "chdir" in res.stderr, (cwd, res)
    assert (await sandbox_env.exec(["ls", "-A", "/sandbox", "/tmp"])).stdout.split() == [
        "/sandbox:",
        "/tmp:",
    ]
    await sandbox_env.exec(["mkdir", "-p", "sub/dir"])
    assert (await sandbox_env.exec(["pwd"], cwd="sub/dir")).stdout == "/sandbox/sub/dir\n"
