"""Secrets kept out of what memlane prints: passwords in URLs, API keys, password-like settings.

Every command-line output goes through here (`memlane config`, `memlane redis status`,
the demo banner, error messages, log lines): a URL keeps its scheme, user, host and
port, and its password reads `****`; a setting that holds a key or a password reads
`****` whole; any other text has each URL password and each secret setting's value
replaced wherever it appears.

Secrets that live outside the settings (a `memlane serve` persona's key read from the
variable its `api_key_env` names, the [memory] upstream's key) are masked by value too, once
whoever resolves them calls `register_secret`: they need not look like `sk-…` to be masked.

Like `config.py` it imports nothing of memlane but the settings, so every room may use it
(a parked run's error in `graph/executor.py` is masked here too). It reads the parts of the
settings it is given (`mask_secrets(text, settings.parts(...).values())` at a door; the memory
graph's context passes the parts it holds), never the environment.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from pydantic import SecretStr

from memlane.config import Component

MASK = "****"

# scheme://[user]:password@ — the password ends at the last "@" before the host (quoted
# passwords hold no "/", "@" or whitespace). A scheme is at most 64 characters: each place one
# may start is tried over those, not to the end of a long run of its characters (quadratic)
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]{0,63}://[^\s:/@]*:)(?P<password>[^\s/@]+)@")
# an OpenAI-style key, configured or not (one pasted into a URL or an error message)
_API_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
# settings whose whole value is a secret, by name: openai_api_key, a service's api_keys, ...
_SECRET_NAME = re.compile(r"(^|_)(api_?keys?|keys?|passwords?|passwd|secrets?|token|credentials?)$", re.IGNORECASE)


# configured secrets that the settings do not hold, by value (see `register_secret`)
_REGISTERED_SECRETS: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask `value` wherever it appears from now on, in this process (a key read from an
    environment variable the settings do not know). Values under 4 characters are ignored."""
    if value and len(value) >= 4:
        _REGISTERED_SECRETS.add(value)


def register_model_secrets(model: Any) -> None:
    """Mask every secret a chat model holds (a LangChain model's `SecretStr` fields: ChatOpenAI's
    `openai_api_key`, whatever its shape), so that an error echoing it is masked in logs and in
    what the queue and the parked runs record."""
    fields = getattr(type(model), "model_fields", None) or {}
    for name in fields:
        value = getattr(model, name, None)
        if isinstance(value, SecretStr):
            register_secret(value.get_secret_value())


def mask_url(url: str) -> str:
    """`redis://:secret@host:port/0` → `redis://:****@host:port/0` (a URL without a password is unchanged)."""
    return _URL_PASSWORD.sub(lambda match: f"{match['head']}{MASK}@", url)


def _is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def _secret_values(value: Any) -> list[str]:
    """The strings inside a secret setting's value (a string, a SecretStr, a list or dict of them)."""
    if isinstance(value, SecretStr):
        return [value.get_secret_value()]
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _secret_values(item)]
    if isinstance(value, (list, tuple, set)):
        return [text for item in value for text in _secret_values(item)]
    return []


def secrets_of(parts: Iterable[Component]) -> list[str]:
    """Every secret value the settings' `parts` hold (SecretStr fields, password-like settings, URL
    passwords), and the registered ones."""
    found: list[str] = []
    for part in parts:
        for name in type(part).model_fields:
            value = getattr(part, name)
            if isinstance(value, SecretStr) or _is_secret_name(type(part).flat_name(name)):
                found += _secret_values(value)
            elif isinstance(value, str):
                found += [
                    text
                    for match in _URL_PASSWORD.finditer(value)
                    for text in (match["password"], unquote(match["password"]))
                ]
    found += sorted(_REGISTERED_SECRETS)
    return [
        secret for secret in dict.fromkeys(found) if len(secret) >= 4
    ]  # a 1-3 character "secret" would mask every word


def mask_secrets(text: str, parts: Iterable[Component] = ()) -> str:
    """`text` with every URL password, every OpenAI-style key, every registered secret and every
    secret value of the settings' `parts` masked."""
    text = _API_KEY.sub("sk-" + MASK, mask_url(text))
    for secret in sorted(secrets_of(parts), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def masked_settings(parts: Mapping[str, Component]) -> dict[str, Any]:
    """The settings' `parts` (by component name) as JSON-ready values under their flat names, secrets
    masked (what `memlane config` prints)."""
    dumped: dict[str, Any] = {}
    for part in parts.values():
        for name, value in part.model_dump(mode="json").items():
            flat, raw = type(part).flat_name(name), getattr(part, name)
            if isinstance(raw, SecretStr) or (_is_secret_name(flat) and _secret_values(raw)):
                value = MASK
            elif isinstance(value, str):
                value = mask_url(value)
            dumped[flat] = value
    return dumped


class MaskingFormatter(logging.Formatter):
    """A log formatter that masks secrets in each formatted line (tracebacks included)."""

    def __init__(self, *args: Any, parts: Iterable[Component] = (), **kwargs: Any) -> None:
        """parts: the settings' parts whose secrets are masked too."""
        super().__init__(*args, **kwargs)
        self.parts = list(parts)

    def format(self, record: logging.LogRecord) -> str:
        return mask_secrets(super().format(record), self.parts)
