"""Config loading: toml files, environment overrides, configure(), clear ConfigErrors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from appl import config
from appl.config import configure, get_config, load_config
from appl.errors import ConfigError
from appl.models import get_model, register_provider

TOML = """
[defaults]
default_model = "fast"
temperature = 0.3

[models.fast]
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "gpt-4o-mini"
api_key_env = "APPL_TEST_KEY"
max_concurrency = 4
rpm = 120
price_input_per_mtok = 0.15
price_output_per_mtok = 0.6
capabilities = { n = false }

[models.env-url]
provider = "openai"

[budget]
max_calls = 50
max_cost_usd = 2.5

[trace]
dir = "runs"
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in (
        "APPL_CONFIG",
        "APPL_DEFAULT_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "APPL_TEST_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    saved = get_config()
    yield
    config.reset_config(saved)


def write(tmp_path: Path, text: str = TOML) -> Path:
    path = tmp_path / "appl.toml"
    path.write_text(text)
    return path


def test_load_from_path(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path))
    fast = cfg.model()
    assert (
        cfg.default_model == "fast" and cfg.temperature == 0.3 and cfg.source.endswith("appl.toml")
    )
    assert (fast.alias, fast.model, fast.max_concurrency, fast.rpm) == (
        "fast",
        "gpt-4o-mini",
        4,
        120,
    )
    assert fast.supports("n") is False and fast.supports("json_schema") is True
    assert cfg.model("env-url").model == "env-url"  # the server's model name defaults to the alias
    assert (cfg.budget.max_calls, cfg.budget.max_cost_usd, cfg.budget.max_tokens) == (50, 2.5, None)
    assert cfg.sections == {"trace": {"dir": "runs"}}
    assert "local" in cfg.models  # the embedded model is always known


def test_env_var_path_cwd_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path)
    monkeypatch.setenv("APPL_CONFIG", str(path))
    assert load_config().default_model == "fast"
    monkeypatch.delenv("APPL_CONFIG")
    monkeypatch.chdir(tmp_path)
    assert load_config().source == "appl.toml"
    monkeypatch.chdir(tmp_path.parent)
    defaults = load_config()
    assert defaults.source == "defaults" and defaults.default_model == "local"


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPL_DEFAULT_MODEL", "env-url")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.invalid/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    cfg = load_config(write(tmp_path))
    assert cfg.default_model == "env-url"
    assert cfg.model("env-url").base_url == "http://example.invalid/v1"  # not set in the file
    assert cfg.model("fast").base_url == "http://127.0.0.1:9/v1"  # the file wins
    assert cfg.model("env-url").resolve_api_key() == "sk-env"


def test_missing_key_error_names_alias_and_variable(tmp_path: Path) -> None:
    config.reset_config(load_config(write(tmp_path)))
    with pytest.raises(ConfigError) as info:
        get_model("fast")
    message = str(info.value)
    assert "'fast'" in message and "APPL_TEST_KEY" in message and "export" in message.lower()


def test_unknown_alias_lists_known_ones(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path))
    with pytest.raises(ConfigError, match=r"unknown model alias 'gpt-5'; known: env-url ") as info:
        cfg.model("gpt-5")
    message = str(info.value)
    toml = str(tmp_path / "appl.toml")
    assert f"fast (from {toml})" in message and "local (from built-in)" in message
    assert f"config file: {toml}" in message


def test_errors_name_where_an_alias_and_the_default_come_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = config.get_config()
    try:
        config.reset_config(load_config(write(tmp_path)))
        config.configure(
            models={"mine": {"provider": "openai", "api_key": "k", "base_url": "http://x/v1"}},
            default_model="missing",
        )
        with pytest.raises(ConfigError) as info:
            config.get_config().model(None)
        message = str(info.value)
        assert "'missing' (the default model, chosen by configure())" in message
        assert "mine (from configure())" in message
        monkeypatch.setenv("APPL_DEFAULT_MODEL", "from-env")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
        cfg = load_config(write(tmp_path))
        with pytest.raises(ConfigError, match=r"chosen by \$APPL_DEFAULT_MODEL"):
            cfg.model(None)
        assert "base_url from $OPENAI_BASE_URL" in cfg.model("env-url").origin
    finally:
        config.reset_config(saved)


def test_bad_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(write(tmp_path, "[models.x\n"))
    with pytest.raises(ConfigError, match=r"bad \[models.x\]: max_concurency: Extra inputs"):
        load_config(write(tmp_path, "[models.x]\nmax_concurency = 3\n"))
    with pytest.raises(
        ConfigError, match=r"bad \[models.x\]: max_concurrency: Input should be greater"
    ):
        load_config(write(tmp_path, "[models.x]\nmax_concurrency = 0\n"))


def test_configure_merges_models_and_redacts_secrets() -> None:
    cfg = configure(
        models={
            "scripted": {
                "provider": "openai",
                "base_url": "http://127.0.0.1:1/v1",
                "api_key": "sk-secret",
            }
        },
        default_model="scripted",
    )
    assert get_config() is cfg and cfg.model().alias == "scripted" and "local" in cfg.models
    assert "sk-secret" not in repr(cfg) and "sk-secret" not in str(cfg.redacted())
    assert cfg.redacted()["models"]["scripted"]["api_key"] == "***"
    with pytest.raises(ConfigError, match="unknown setting"):
        configure(default_modle="x")


def test_unknown_provider_and_register_provider() -> None:
    configure(models={"odd": {"provider": "nonesuch"}}, default_model="odd")
    with pytest.raises(ConfigError, match=r"unknown provider 'nonesuch'.*register_provider"):
        get_model()

    class Echo:
        name = "odd"

        async def generate(self, request, *, on_text=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        async def aclose(self) -> None:
            pass

    register_provider("nonesuch", lambda cfg: Echo())
    assert isinstance(get_model().inner, Echo)


def test_a_local_model_table_keeps_the_local_defaults(tmp_path: Path) -> None:
    """A [models.X] for the embedded server inherits the built-in local settings (one request
    at a time, the long timeout, its capabilities) unless it sets them itself; so does
    configure(). Remote tables keep the remote defaults."""
    text = (
        '[models.local]\nprovider = "local"\noptions = { n_threads = 1 }\n'
        '[models.big]\nprovider = "local"\ntimeout_s = 900\n'
        'options = { model = "qwen2.5-coder-1.5b" }\n'
    )
    cfg = load_config(write(tmp_path, text))
    (tmp_path / "empty").mkdir()
    builtin = load_config(write(tmp_path / "empty", "")).model("local")
    for alias in ("local", "big"):
        m = cfg.model(alias)
        assert m.max_concurrency == builtin.max_concurrency == 1
        assert m.supports("json_schema") and not m.supports("n")
    assert cfg.model("local").timeout_s == builtin.timeout_s == 300.0
    assert cfg.model("local").options == {"n_threads": 1}
    assert cfg.model("big").timeout_s == 900.0
    configured = configure(models={"mine": {"provider": "local", "options": {"n_ctx": 2048}}})
    assert configured.model("mine").max_concurrency == 1
    assert configured.model("mine").timeout_s == 300.0
    remote = configure(models={"r": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    assert remote.model("r").max_concurrency == 16 and remote.model("r").timeout_s == 120.0
