"""The settings model: environment names, defaults, and the table of docs/configuration.md."""

from __future__ import annotations

import re
from pathlib import Path

from memlane.config import Settings, settings_markdown_table


def test_the_configuration_page_table_matches_the_settings_model():
    page = (Path(__file__).parents[1] / "docs" / "configuration.md").read_text()
    table = re.search(r"<!-- settings-table:start -->\n(.*?)\n<!-- settings-table:end -->", page, re.S)
    assert table, "docs/configuration.md lost its settings-table markers"
    assert table.group(1).strip() == settings_markdown_table().strip(), (
        "docs/configuration.md's settings table is stale: paste the output of `memlane config --markdown`"
    )


def test_settings_read_the_usual_environment_names(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://example:6379")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("MEMLANE_CHAT_MODEL", "qwen2.5")
    settings = Settings()
    assert settings.redis_url == "redis://example:6379"
    assert settings.openai_base_url == "http://localhost:11434/v1"
    assert settings.chat_model == "qwen2.5" and settings.memory_model_name == "qwen2.5"
    assert settings.has_chat_model


def test_every_setting_documents_itself():
    from memlane.config import COMPONENTS

    assert all(field.description for model in COMPONENTS.values() for field in model.model_fields.values())


def test_every_flat_name_reaches_its_component(monkeypatch):
    from memlane.config import COMPONENTS, FLAT_NAMES, SearchSettings, ServeSettings

    # prefixed, own-named (no prefix in a prefixed component) and renamed flat names alike
    names = {
        "search_candidates": ("search", "candidates", 7),
        "hybrid_alpha": ("search", "hybrid_alpha", 0.5),
        "privacy_redaction": ("privacy", "redaction", "off"),
        "forget_min_relevance": ("privacy", "forget_min_relevance", 0.5),
        "memory_buffer_tokens": ("graph", "buffer_tokens", 99),
        "summary_max_depth": ("graph", "summary_max_depth", 2),
        "memory_run_retries": ("scheduler", "run_retries", 1),
        "retention_message_ttl_days": ("retention", "message_ttl_days", 2.0),
        "serve_config": ("serve", "config_file", Path("serve.toml")),
        "key_prefix": ("store", "key_prefix", "flat"),
    }
    for flat, (part, name, value) in names.items():
        assert FLAT_NAMES[flat] == (part, name)
        assert getattr(getattr(Settings(**{flat: value}), part), name) == value
        assert getattr(Settings().model_copy(update={flat: value}), flat) == value
        assert getattr(COMPONENTS[part](**{flat: value}), name) == value
        monkeypatch.setenv(f"MEMLANE_{flat.upper()}", str(value))
        assert getattr(getattr(Settings(), part), name) == value
    assert "serve_config_file" not in FLAT_NAMES and "search_hybrid_alpha" not in FLAT_NAMES
    assert SearchSettings(candidates=3, search_candidates=5).candidates == 3  # the field's own name wins
    assert ServeSettings.flat_name("config_file") == "serve_config"
