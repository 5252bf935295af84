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
