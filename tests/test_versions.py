"""Every command line tool answers --version with the installed distribution's version."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import appl

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("tool", ["appl", "codegen-eval", "kernel-gym", "kernel-agent"])
def test_version(tool: str) -> None:
    done = subprocess.run(
        [str(BIN / tool), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{tool} {metadata.version('codegen-lab')}"
    assert appl.__version__ == metadata.version("codegen-lab")
