"""The Inspect sandbox `bwrap` (sandboxes/inspect_sandbox.py) beyond Inspect's own
conformance suite (test_inspect_self_check.py): what that suite cannot see from inside one
of our namespaces (a leaked process tree, the host's files), hostile file layouts a payload
leaves behind, limits, bad configurations, and `inspect eval` itself with the sandbox found
through our entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from collections.abc import AsyncIterator, Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from inspect_ai.util import (
    OutputLimitExceededError,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
)
from inspect_ai.util._sandbox.limits import override_max_exec_output_size
from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

from sandboxes.base import sandbox_uid
from sandboxes.inspect_sandbox import (
    BwrapConfig,
    BwrapConfigError,
    BwrapExecResult,
    BwrapSandboxEnvironment,
    load_config,
)

from .conftest import marker, processes_with

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


async def _open(config: BwrapConfig | None = None) -> BwrapSandboxEnvironment:
    envs = await BwrapSandboxEnvironment.sample_init("t", config or BwrapConfig(), {})
    env = envs["default"]
    assert isinstance(env, BwrapSandboxEnvironment)
    return env


async def _close(env: BwrapSandboxEnvironment) -> None:
    await BwrapSandboxEnvironment.sample_cleanup("t", None, {"default": env}, False)


@pytest.fixture
async def env() -> AsyncIterator[BwrapSandboxEnvironment]:
    e = await _open()
    try:
        yield e
    finally:
        await _close(e)


@pytest.fixture
def host_file() -> Iterator[Path]:
    """A world-readable file on the host, at a path the sandbox's /tmp shadows."""
    d = Path("/tmp") / f"h3-inspect-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    f = d / "secret.txt"
    f.write_text("HOST-SECRET\n")
    f.chmod(0o644)
    yield f
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


async def test_a_timeout_kills_the_whole_tree_on_the_host(env: BwrapSandboxEnvironment) -> None:
    # Inspect's own check looks with `ps` from a later exec: in our sandbox that exec has a
    # pid namespace of its own and would see nothing even if the tree had survived. Look
    # from the host instead, right after the TimeoutError.
    m = marker()
    with pytest.raises(TimeoutError):
        await env.exec(["sh", "-c", f"sleep {m} & setsid sleep {m} & sleep {m}; :"], timeout=1)
    assert processes_with(m) == []


async def test_commands_run_as_the_sandbox_user_and_never_as_root(
    env: BwrapSandboxEnvironment,
) -> None:
    expected = sandbox_uid() if os.geteuid() == 0 else os.getuid()
    res = await env.exec(["id", "-u"])
    assert res.stdout.strip() == str(expected) and expected != 0
    for who in ("root", "0", "nobody-else"):
        with pytest.raises(SandboxUserUnsupportedError, match="unprivileged"):
            await env.exec(["id", "-u"], user=who)
    assert (await env.exec(["id", "-u"], user="sandbox")).stdout.strip() == str(expected)


async def test_no_network_no_repository_no_home(env: BwrapSandboxEnvironment) -> None:
    res = await env.exec(["sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1"])
    assert res.stdout.split() == ["lo"]
    res = await env.exec(["ls", str(REPO), "/root"])
    assert not res.success and "No such file" in res.stderr


def _host_untouched(host_file: Path) -> bool:
    return (
        host_file.read_text() == "HOST-SECRET\n"
        and not (host_file.parent / "new.txt").exists()
        and not Path("/etc/h3-inspect-test").exists()
    )


async def test_a_planted_symlink_is_resolved_inside_the_sandbox(
    env: BwrapSandboxEnvironment, host_file: Path
) -> None:
    # We read and write as root on the host. A payload's symlink must not make us read a
    # host file (a naive host-side open of run_dir/link would return HOST-SECRET) or write
    # one: the path is resolved in an exec, in the sandbox's own mounts, as its user.
    await env.exec(["ln", "-s", str(host_file), "leak"])
    await env.exec(["ln", "-s", "/etc/shadow", "shadow"])
    await env.exec(["ln", "-s", str(host_file.parent), "dir"])
    for name in ("leak", "shadow", "dir/secret.txt", f"/tmp/../{host_file}"):
        with pytest.raises(FileNotFoundError):
            await env.read_file(name)
    for name in ("leak", "dir/new.txt"):  # their targets do not exist in the sandbox
        with pytest.raises(PermissionError):
            await env.write_file(name, "overwritten")
    await env.exec(["mkdir", "-p", str(host_file.parent)])  # now they do, in its own /tmp
    await env.write_file("leak", "overwritten")
    await env.write_file("dir/new.txt", "new")
    assert await env.read_file(str(host_file)) == "overwritten"
    assert await env.read_file(str(host_file.parent / "new.txt")) == "new"
    await env.exec(["ln", "-s", "/etc", "etc"])
    with pytest.raises(PermissionError):
        await env.write_file("etc/h3-inspect-test", "x")
    assert _host_untouched(host_file)
    # an honest symlink still works, through the sandbox's resolution
    await env.write_file("real.txt", "real")
    await env.exec(["ln", "-s", "real.txt", "alias"])
    assert await env.read_file("alias") == "real"


async def test_permissions_are_the_sandbox_users_though_we_are_root(
    env: BwrapSandboxEnvironment,
) -> None:
    await env.write_file("locked/f.txt", "x")
    await env.exec(["chmod", "000", "locked"])
    with pytest.raises(PermissionError):
        await env.read_file("locked/f.txt")
    with pytest.raises(PermissionError):
        await env.write_file("locked/g.txt", "y")
    await env.exec(["chmod", "755", "locked"])
    assert await env.read_file("locked/f.txt") == "x"
    # files we write belong to the sandbox user, so its programs can change them
    await env.write_file("mine.txt", "a\n")
    assert (await env.exec(["sh", "-c", "echo b >> mine.txt && cat mine.txt"])).stdout == "a\nb\n"
    # rewriting a script keeps it executable, as writing into it would
    await env.write_file("run.sh", "#!/bin/sh\necho one\n")
    await env.exec(["chmod", "755", "run.sh"])
    await env.write_file("run.sh", "#!/bin/sh\necho two\n")
    assert (await env.exec(["./run.sh"])).stdout == "two\n"
    res = await env.exec(["no-such-command-h3"])  # a missing program is a result
    assert (res.success, res.returncode) == (False, 127)


async def test_files_persist_per_sample_and_samples_are_apart() -> None:
    a, b = await _open(), await _open()
    try:
        await a.exec(["sh", "-c", "echo one > /tmp/t.txt && mkdir -p w && echo two > w/f"])
        assert (await a.exec(["cat", "/tmp/t.txt", "/sandbox/w/f"])).stdout == "one\ntwo\n"
        assert await a.read_file("/tmp/t.txt") == "one\n"
        res = await b.exec(["cat", "/tmp/t.txt", "w/f"])
        assert not res.success and res.stdout == ""
        assert a._sb is not None and a._tmp is not None
        dirs = [a._sb.run_dir, a._tmp.run_dir]
        assert all(d is not None and d.is_dir() for d in dirs)
    finally:
        await _close(a)
        await _close(b)
    assert not any(d is not None and d.exists() for d in dirs)
    with pytest.raises(SandboxUnavailableError):
        await a.exec(["true"])
    with pytest.raises(SandboxUnavailableError):
        await a.read_file("x")


async def test_limits_are_results_with_our_status() -> None:
    e = await _open(BwrapConfig(memory_mb=64))
    try:
        res = await e.exec(["python3", "-c", "b = bytearray(512 << 20); print(len(b))"])
        assert isinstance(res, BwrapExecResult)
        assert (res.success, res.returncode, res.sandbox_status) == (False, 137, "memory_limit")
        assert "memory limit" in res.stderr
        with override_max_exec_output_size(4096), pytest.raises(OutputLimitExceededError):
            await e.exec(["yes"], timeout=30)
        # a program that fails like an exec failure but says something else is a result
        res = await e.exec(["sh", "-c", "echo nope >&2; exit 126"])
        assert (res.success, res.returncode) == (False, 126)
    finally:
        await _close(e)


async def test_cwd_relative_absolute_and_missing(env: BwrapSandboxEnvironment) -> None:
    await env.exec(["mkdir", "-p", "sub/deeper"])
    assert (await env.exec(["pwd"], cwd="sub/deeper")).stdout == "/sandbox/sub/deeper\n"
    assert (await env.exec(["pwd"], cwd="/usr")).stdout == "/usr\n"
    assert (await env.exec(["pwd"])).stdout == "/sandbox\n"
    res = await env.exec(["pwd"], cwd="missing")
    assert not res.success and "chdir" in res.stderr


async def test_a_cwd_cannot_smuggle_bwrap_options(env: BwrapSandboxEnvironment) -> None:
    # bwrap reads its options NUL-separated from a memfd, and the cwd is spliced in there:
    # a NUL in it (the cwd may come from a model's tool call) would bind the host's root
    # into the sandbox, writable where the uid may write, or share the host's network.
    smuggled = "/\0--bind\0/\0/sandbox/host\0--share-net\0--chdir\0/usr"
    with pytest.raises(ValueError, match="NUL"):
        await env.exec(
            ["sh", "-c", "ls /sandbox/host/etc/shadow; tail -n +3 /proc/net/dev"], cwd=smuggled
        )
    assert (await env.exec(["ls", "/sandbox"])).stdout == ""


async def test_a_sandbox_that_cannot_start_raises_unavailable() -> None:
    with pytest.raises(SandboxUnavailableError, match="cannot start"):
        await _open(BwrapConfig(extra_ro_binds=("/nonexistent-h3-inspect",)))


def test_config_from_a_file_and_bad_configs(tmp_path: Path) -> None:
    good = tmp_path / "bwrap.yaml"
    good.write_text("memory_mb: 512\npids: 64\n")
    cfg = load_config(str(good))
    assert (cfg.memory_mb, cfg.pids, cfg.tmp_mb) == (512, 64, 512)
    (tmp_path / "bad.yaml").write_text("memroy_mb: 5\n")
    with pytest.raises(BwrapConfigError, match="memroy_mb: Extra inputs"):
        load_config(str(tmp_path / "bad.yaml"))
    with pytest.raises(BwrapConfigError, match="does not exist"):
        load_config(str(tmp_path / "none.yaml"))
    with pytest.raises(BwrapConfigError, match="/tmp is its own"):
        BwrapSandboxEnvironment.config_deserialize({"extra_ro_binds": ["/tmp/x"]})


def test_the_entry_point_registers_bwrap() -> None:
    # The installed metadata names our registry module, and loading it brings the sandbox
    # (the smoke test below has `inspect eval` find it through this alone).
    (ep,) = [e for e in entry_points(group="inspect_ai") if e.name == "codegen_eval"]
    assert ep.value == "codegen_eval.inspect_registry"
    assert ep.load().BwrapSandboxEnvironment is BwrapSandboxEnvironment
    assert registry_find_sandboxenv("bwrap") is BwrapSandboxEnvironment
    assert registry_find_sandboxenv("codegen-docker").__module__ == "sandboxes.inspect_docker"


@pytest.fixture
def sandbox_base() -> Iterator[Path]:
    """A sandbox base directory of the run's own (to see what it leaves), reachable by the
    sandbox uid (pytest's tmp_path is under a 0700 directory)."""
    d = Path(tempfile.mkdtemp(prefix="h3-inspect-base-", dir="/tmp"))
    d.chmod(0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _inspect_eval(tmp_path: Path, base: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CODEGEN_SANDBOX_DIR=str(base), COLUMNS="200")
    # relative to the repository: inspect 0.3.285 globs the task path, and pathlib refuses
    # an absolute pattern
    task = "tests/sandboxes/inspect_fixture/smoke_task.py"
    return subprocess.run(
        [
            *(str(BIN / "inspect"), "eval", task, "--model", "mockllm/model"),
            *("--log-dir", str(tmp_path / "logs"), "--display", "plain", *extra),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )


@pytest.mark.slow
def test_inspect_eval_runs_a_task_in_bwrap(tmp_path: Path, sandbox_base: Path) -> None:
    done = _inspect_eval(tmp_path, sandbox_base)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log,) = (tmp_path / "logs").glob("*.eval")
    with zipfile.ZipFile(log) as z:
        header = json.loads(z.read("header.json"))
        samples = [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]
    assert header["status"] == "success"
    assert header["eval"]["sandbox"]["type"] == "bwrap"
    # the bwrap.yaml beside the task file was found (Inspect's config_files convention)
    assert header["eval"]["sandbox"]["config"] == "bwrap.yaml"
    (score,) = header["results"]["scores"]
    assert score["metrics"]["accuracy"]["value"] == 1.0
    uid = sandbox_uid() if os.geteuid() == 0 else os.getuid()
    assert len(samples) == 2
    for s in samples:
        (sc,) = s["scores"].values()
        assert sc["answer"] == f"42 uid={uid}"
        assert (s["metadata"]["build_rc"], s["metadata"]["run_rc"]) == (0, 0)
        assert s["metadata"]["file_size_limit"] == str(3 << 20)  # file_mb: 3 in bwrap.yaml
    # every sample's directories were removed
    assert not [p for p in sandbox_base.iterdir() if p.name.startswith("bwrap-")]
    # a bad sandbox configuration is one line from the CLI, not a traceback
    (tmp_path / "bad.yaml").write_text("memroy_mb: 5\n")
    done = _inspect_eval(tmp_path, sandbox_base, "--sandbox", f"bwrap:{tmp_path / 'bad.yaml'}")
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert "memroy_mb: Extra inputs are not permitted" in out


@pytest.mark.slow
def test_inspect_bash_and_python_tools_run_in_bwrap(tmp_path: Path) -> None:
    # The common use: an agent with Inspect's own bash() and python() tools. Files persist
    # between tool calls, the bash tool's timeout is reported to the model with the partial
    # output, and the sleep it cut is gone from the host.
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import bash, python

    m = marker()

    def reply(o: ModelOutput) -> ModelOutput:
        # with usage set, mockllm does not count tokens (tiktoken would download a file)
        o.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return o

    script = f"echo $((6*7)) > a.txt; id -u; cat a.txt; sleep {m}"
    outputs = [
        reply(ModelOutput.for_tool_call("mockllm/model", "bash", {"command": script})),
        reply(
            ModelOutput.for_tool_call(
                "mockllm/model", "python", {"code": "print(open('a.txt').read())"}
            )
        ),
        reply(ModelOutput.from_content("mockllm/model", "42")),
    ]
    task = Task(
        dataset=[Sample(input="6*7?", target="42")],
        solver=[use_tools(bash(timeout=3), python(timeout=60)), generate()],
        scorer=includes(),
        sandbox="bwrap",
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = eval(task, model=model, display="none", log_dir=str(tmp_path))
    assert log.status == "success" and log.samples is not None
    tools = [msg for msg in log.samples[0].messages if msg.role == "tool"]
    uid = sandbox_uid() if os.geteuid() == 0 else os.getuid()
    assert tools[0].text == f"{uid}\n42\n"
    assert tools[0].error is not None and tools[0].error.type == "timeout"
    assert tools[1].text.strip() == "42" and tools[1].error is None
    assert processes_with(m) == []
