"""Secrets kept out of what memlane prints: URLs, settings, free text, log lines."""

from __future__ import annotations

import logging

from memlane.config import Settings
from memlane.masking import MaskingFormatter, mask_secrets, mask_url, masked_settings


def test_a_url_keeps_everything_but_its_password():
    assert mask_url("redis://:p4ss@127.0.0.1:6390/0") == "redis://:****@127.0.0.1:6390/0"
    assert mask_url("rediss://alice:p%40ss@redis.example:6380") == "rediss://alice:****@redis.example:6380"
    for plain in ("redis://localhost:6379", "http://example.com:8080/a@b", "redis://alice@host:1"):
        assert mask_url(plain) == plain


def test_settings_and_text_are_masked_by_name_type_and_value():
    settings = Settings(
        redis_url="redis://:hunter2-secret@10.0.0.1:6379/0",
        openai_api_key="key-without-the-usual-prefix",
        openai_base_url="http://user:base-secret@llm.local/v1",
    )
    shown = masked_settings(settings.parts())
    assert shown["redis_url"] == "redis://:****@10.0.0.1:6379/0"
    assert shown["openai_api_key"] == "****" and shown["openai_base_url"] == "http://user:****@llm.local/v1"
    assert shown["key_prefix"] == "memlane" and shown["memory_buffer_tokens"] == 1024  # not secrets

    text = "auth failed for hunter2-secret with key-without-the-usual-prefix; also sk-proj-abcdef123456 and p@ss"
    masked = mask_secrets(text, settings.parts().values())
    assert "hunter2-secret" not in masked and "key-without-the-usual-prefix" not in masked
    assert "sk-proj-abcdef123456" not in masked and "sk-****" in masked
    assert masked.endswith("p@ss")  # nothing configured holds it


def test_log_lines_are_masked():
    settings = Settings(openai_api_key="sk-live-0123456789")
    formatter = MaskingFormatter("%(message)s", parts=settings.parts().values())
    record = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "cannot reach %s with %s", ("redis://:pw12@h:1", "sk-live-0123456789"), None
    )
    assert formatter.format(record) == "cannot reach redis://:****@h:1 with sk-****"
