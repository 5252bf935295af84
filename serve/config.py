"""The `memlane serve` configuration file: API keys, their tenants, and the personas.

A TOML file (`MEMLANE_SERVE_CONFIG`, or `memlane serve --config`); `serve.example.toml` in the
repository shows every field. Keys are stored hashed (`memlane serve hash-key` prints a new key
and the line to paste); each key belongs to one tenant, a namespace above user ids, so a key
can only ever reach the users of its own tenant (`store_user_id`).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from memlane import ProfileConfig, Settings
from memlane.config import RecallSettings
from memlane.doors import ProfileConfigs, with_serve_sections
from memlane.masking import register_secret
from memlane.tenants import TENANT_PATTERN, USER_ID_MAX_CHARS, check_user_id, store_user_id  # noqa: F401  (serve's names)
from memlane.webhooks import WebhookTarget

Scope = Literal["chat", "read", "write", "shared"]
# what a key may do when its entry lists no scopes; "shared" (writing the tenant's shared memory,
# which every user's recall may read) only when listed
ALL_SCOPES: tuple[Scope, ...] = ("chat", "read", "write")
HASH_SCHEME = "sha256:"


class ServeConfigError(ValueError):
    """The configuration file is missing or wrong; the message names the file and the field."""


def hash_api_key(api_key: str) -> str:
    """The stored form of an API key. Keys are random 256-bit tokens, so one SHA-256 is enough
    (no password stretching): the hash cannot be turned back into the key."""
    return HASH_SCHEME + hashlib.sha256(api_key.encode("utf-8")).hexdigest()


# the tokens whose hashes serve.example.toml ships: anyone who read the file holds them
EXAMPLE_TOKENS = ("example-acme-backend-key", "example-acme-dashboard-key")


def new_api_key() -> str:
    """A fresh random API key ("ml-" and 43 URL-safe characters)."""
    return "ml-" + secrets.token_urlsafe(32)


class ApiKey(BaseModel):
    """One bearer key: who holds it (`name`, shown in profile histories as "api:<name>"),
    the tenant it is scoped to, and what it may do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    tenant: str
    hash: str = Field(description='"sha256:<hex>" of the key; `memlane serve hash-key` prints it')
    scopes: tuple[Scope, ...] = Field(
        default=ALL_SCOPES,
        description="chat, read (memories), write (memories), shared (write the tenant's shared memory)",
    )
    personas: tuple[str, ...] | None = Field(default=None, description="personas it may use; unset: all")

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, tenant: str) -> str:
        if not TENANT_PATTERN.fullmatch(tenant):
            raise ValueError("a tenant id is 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit")
        return tenant

    @field_validator("hash")
    @classmethod
    def _hash(cls, value: str) -> str:
        digest = value.removeprefix(HASH_SCHEME)
        if not value.startswith(HASH_SCHEME) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError('expected "sha256:" and 64 hex digits; `memlane serve hash-key` prints it')
        return value

    @property
    def actor(self) -> str:
        """How profile histories name changes made with this key."""
        return f"api:{self.name}"

    def may(self, scope: Scope) -> bool:
        return scope in self.scopes

    def may_use(self, persona_id: str) -> bool:
        return self.personas is None or persona_id in self.personas


# What a persona may change of recall, declared: each is read per turn from the settings the turn
# is given (tests/serve/test_personas.py shows each one's effect). The rest of `RecallSettings` is the
# deployment's: the similarity floor rescales the embedder's cosine in the relevance the store
# computes once for every persona (issue 33, item 1: it was accepted per persona and changed
# nothing), the tuning weights and time budgets are the store's and the service's, and profile
# entries have a section of their own (their weight orders only their past values). A persona
# naming another is refused, naming the setting.
PERSONA_RECALL_SETTINGS = (
    "enabled",
    "max_tokens",
    "max_memories",
    "recent_messages",
    "min_relevance",
    "neighbour_messages",
    "weight_event",
    "weight_message",
)


def _recall_overrides_model() -> type[BaseModel]:
    """The persona's `[recall]` table: `PERSONA_RECALL_SETTINGS`, with the settings' own types and bounds."""
    fields: dict[str, Any] = {
        name: (RecallSettings.model_fields[name].annotation, RecallSettings.model_fields[name])
        for name in PERSONA_RECALL_SETTINGS
    }
    return create_model("RecallOverrides", __config__=ConfigDict(extra="forbid"), **fields)


if TYPE_CHECKING:  # a model made at run time: checkers see its base
    RecallOverrides = BaseModel
else:
    RecallOverrides = _recall_overrides_model()


OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


class Upstream(BaseModel):
    """An OpenAI-compatible endpoint and the model to ask there.

    A key goes only where it was configured to go: `api_key_env` names the variable holding
    this upstream's key; without it, the upstream gets OPENAI_API_KEY only when it is the
    server that key is for (OPENAI_BASE_URL, else OpenAI), and no key otherwise."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="the model name the upstream knows")
    base_url: str | None = Field(default=None, description="unset: OPENAI_BASE_URL, else OpenAI")
    api_key_env: str | None = Field(
        default=None,
        description="environment variable holding its API key; unset: OPENAI_API_KEY when the upstream is "
        "OPENAI_BASE_URL (or OpenAI), else no key",
    )

    def resolved_base_url(self, settings: Settings) -> str:
        return (self.base_url or settings.models.openai_base_url or OPENAI_DEFAULT_URL).rstrip("/")

    def uses_settings_url(self, settings: Settings) -> bool:
        """Whether the upstream is the server OPENAI_API_KEY is configured for."""
        return self.resolved_base_url(settings) == (settings.models.openai_base_url or OPENAI_DEFAULT_URL).rstrip("/")

    def api_key(self, settings: Settings) -> str | None:
        """The key sent to this upstream (None: no Authorization header); registered for masking."""
        settings_key = settings.models.openai_api_key.get_secret_value() if settings.models.openai_api_key else None
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key is None and self.api_key_env == "OPENAI_API_KEY":
                key = settings_key
        else:
            key = settings_key if self.uses_settings_url(settings) else None
        register_secret(key)
        return key or None

    def key_note(self, name: str, settings: Settings) -> str | None:
        """A sentence on a key this upstream will not get, for the configuration check; None when fine."""
        where = self.resolved_base_url(settings)
        if (
            self.api_key_env
            and not os.environ.get(self.api_key_env)
            and not (self.api_key_env == "OPENAI_API_KEY" and settings.models.openai_api_key)
        ):
            return f"{name} sends no API key to {where}: its api_key_env {self.api_key_env} is not set"
        if not self.api_key_env and not self.uses_settings_url(settings):
            return (
                f"{name} sends no API key to {where} (OPENAI_API_KEY goes only to "
                f"{(settings.models.openai_base_url or OPENAI_DEFAULT_URL).rstrip('/')}); set its api_key_env "
                "to the environment variable holding that server's key, if it needs one"
            )
        return None


class Persona(Upstream):
    """What a `model` name of a chat request stands for: a system prompt, an upstream and recall settings."""

    system_prompt: str = ""
    description: str = ""
    auto_save: bool | None = Field(default=None, description="store turns by default; unset: MEMLANE_AUTO_SAVE_ENABLED")
    memory_scope: Literal["persona", "user"] = Field(
        default="persona",
        description='"persona": the persona keeps its own memory of each user (the memories API reads it with '
        '?agent_id=<persona id>); "user": the user\'s own memory, shared with every persona that says "user"',
    )
    read_shared: bool = Field(default=False, description="recall reads the tenant's shared memory (/v1/shared) too")
    profile: ProfileConfig | None = Field(
        default=None, description="the memory runs of this persona's own memory: the keys it names over the default's"
    )
    recall: RecallOverrides = Field(default_factory=RecallOverrides)

    def agent_id(self, persona_id: str) -> str | None:
        """The agent whose memory of the user this persona's chats read and write (None: the user's)."""
        return persona_id if self.memory_scope == "persona" else None

    def settings(self, base: Settings) -> Settings:
        """`base` with this persona's recall settings and auto-save default."""
        recall = {name: getattr(self.recall, name) for name in self.recall.model_fields_set}
        turns = {} if self.auto_save is None else {"auto_save_enabled": self.auto_save}
        if not recall and not turns:
            return base
        return base.model_copy(
            update={"recall": base.recall.model_copy(update=recall), "turns": base.turns.model_copy(update=turns)}
        )


class Tenant(BaseModel):
    """What one tenant configures of its own."""

    model_config = ConfigDict(extra="forbid")

    profile: ProfileConfig | None = Field(
        default=None, description="its users' memory runs: the keys it names over the default's"
    )
    webhooks: list[WebhookTarget] = Field(
        default_factory=list,
        description="URLs its users' memory changes are posted to, signed (memlane/webhooks.py); only its own users'",
    )


class ServeConfig(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKey] = Field(default_factory=list)
    personas: dict[str, Persona] = Field(default_factory=dict)
    profile: ProfileConfig | None = Field(
        default=None,
        description="the memory runs' slots and prompt rules: the keys it names over MEMLANE_PROFILE_CONFIG's",
    )
    tenants: dict[str, Tenant] = Field(default_factory=dict)
    memory: Upstream | None = Field(default=None, description="the memory graph's model; unset: the settings'")
    _by_hash: dict[str, ApiKey] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> ServeConfig:
        seen: set[str] = set()
        for key in self.keys:
            if key.hash in seen:
                raise ValueError(f"key {key.name!r}: the same hash is listed twice")
            seen.add(key.hash)
            unknown = [persona for persona in key.personas or () if persona not in self.personas]
            if unknown:
                raise ValueError(f"key {key.name!r} names personas that are not configured: {unknown}")
        for persona_id in self.personas:
            if not persona_id or len(persona_id) > 128:
                raise ValueError(f"persona id {persona_id!r} must be 1 to 128 characters")
        for tenant in self.tenants:
            if not TENANT_PATTERN.fullmatch(tenant):
                raise ValueError(f"tenants.{tenant}: not a tenant id (1-63 of a-z, 0-9, '_' and '-')")
        self._by_hash = {key.hash: key for key in self.keys}
        return self

    def profile_configs(self, base: ProfileConfigs) -> ProfileConfigs:
        """The memory runs' configurations: `base` (MEMLANE_PROFILE_CONFIG's) under this file's
        `[profile]`, `[tenants.<id>.profile]` and `[personas.<id>.profile]` sections, as
        `memlane worker` reads them too (`with_serve_sections`). Raises ValueError naming a bad key."""
        return with_serve_sections(
            base, self.model_dump(include={"profile", "tenants", "personas"}, exclude_unset=True)
        )

    def key_notes(self, settings: Settings) -> list[str]:
        """What the configuration check says about upstream keys: the upstreams that get none."""
        upstreams: list[tuple[str, Upstream]] = [
            (f"persona {persona_id!r}", persona) for persona_id, persona in self.personas.items()
        ]
        if self.memory is not None:
            upstreams.append(("the [memory] model", self.memory))
        return [note for name, upstream in upstreams if (note := upstream.key_note(name, settings))]

    def example_keys(self) -> list[str]:
        """The configured keys whose token is one of serve.example.toml's published ones."""
        published = {hash_api_key(token) for token in EXAMPLE_TOKENS}
        return [key.name for key in self.keys if key.hash in published]

    def key_for_token(self, token: str) -> ApiKey | None:
        """The key a bearer token is, or None when it is no configured key."""
        if not token:
            return None
        return self._by_hash.get(hash_api_key(token))


def load_serve_config(path: str | Path) -> ServeConfig:
    """Read and check a configuration file. Raises ServeConfigError naming what is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ServeConfigError(f"{path}: no such file; set MEMLANE_SERVE_CONFIG (see serve.example.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ServeConfigError(f"{path}: not valid TOML: {error}") from error
    try:
        config = ServeConfig.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}" for problem in error.errors()
        )
        raise ServeConfigError(f"{path}: {problems}") from error
    if not config.keys:
        raise ServeConfigError(f"{path}: no [[keys]]: nobody could call the API (`memlane serve hash-key` makes one)")
    if not config.personas:
        raise ServeConfigError(f"{path}: no [personas.<id>]: chat requests would have no model to name")
    return config
