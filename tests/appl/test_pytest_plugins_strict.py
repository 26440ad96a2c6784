"""appl's pytest fixtures (`scripted`, `appl_replay`) in a user's own project under pytest's
and pytest-asyncio's default configuration (strict mode, no asyncio_mode = "auto")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

USER_TESTS = """
import pytest
from appl import gen, ppl
from appl.testing import Rule


@ppl
async def hello(name: str) -> str:
    f"Say hello to {name}"
    return await gen()


@ppl
def hello_sync(name: str):
    f"Say hello to {name}"
    return gen()


@pytest.mark.asyncio
async def test_scripted(scripted):
    server = scripted([Rule(match="hello", reply="hi there")])
    assert await hello("bob") == "hi there"
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_replay(scripted, appl_replay):
    server = scripted([Rule(match="hello", reply=REPLY)])
    with appl_replay("traces/hello.jsonl"):
        assert await hello("ann") == "recorded"
    assert len(server.requests) == CALLS


def test_sync_test_with_the_fixtures(scripted, appl_replay):
    scripted([Rule(match="hello", reply=REPLY)])
    with appl_replay("traces/sync.jsonl"):
        assert str(hello_sync("ann")) == "recorded"
"""


def _pytest(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_fixtures_work_in_a_project_with_default_configuration(tmp_path: Path) -> None:
    project = tmp_path / "userproj"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")  # the defaults: strict asyncio mode
    test_file = project / "tests" / "test_user.py"
    # first run: the traces are absent, so appl_replay records the scripted answers
    test_file.write_text(USER_TESTS.replace("REPLY", '"recorded"').replace("CALLS", "1"))
    first = _pytest(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "3 passed" in first.stdout
    assert (project / "traces" / "hello.jsonl").is_file()
    # second run: the server would answer differently, but the traces answer, strictly
    test_file.write_text(USER_TESTS.replace("REPLY", '"live"').replace("CALLS", "0"))
    second = _pytest(project)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "3 passed" in second.stdout
