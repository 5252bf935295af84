"""Profile configurations by tenant and by agent: which slots and prompt rules a memory run uses
for the store user it runs for.

One deployment-wide `ProfileConfig` (the default), and sections that override the keys they name:
per tenant (a store user "tenant/user", `memlane.tenants`) and per agent (an agent's scope of a
user, `store/scopes.py`; in `memlane serve`, a persona). An agent's section wins over its tenant's,
which wins over the default. Two places write them, read by one function (`profile_configs_of`):

- the file MEMLANE_PROFILE_CONFIG names (TOML or JSON): the default's keys at the top, and
  `[tenants.<id>]` / `[agents.<id>]` tables;
- `memlane serve`'s configuration file: `[profile]`, `[tenants.<id>.profile]` and
  `[personas.<id>.profile]`, over the settings' file.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memlane.nodes.profile_config import ProfileConfig, default_profile_config
from memlane.store.scopes import split_user_id


class ProfileConfigs(BaseModel):
    """The default profile configuration and the tenants' and agents' own."""

    model_config = ConfigDict(extra="forbid")

    default: ProfileConfig = Field(default_factory=default_profile_config)
    tenants: dict[str, ProfileConfig] = Field(default_factory=dict)
    agents: dict[str, ProfileConfig] = Field(default_factory=dict)

    def of(self, user_id: str) -> ProfileConfig:
        """The configuration of a memory run for the store user `user_id`."""
        user, agent = split_user_id(user_id)
        if agent is not None and agent in self.agents:
            return self.agents[agent]
        tenant, slash, _ = user.partition("/")
        if slash and tenant in self.tenants:
            return self.tenants[tenant]
        return self.default

    def validating_all(self) -> ProfileConfigs:
        """These configurations, each asking the model before adding to any empty slot (`validate_all`)."""
        on = {"validate_all": True}
        return ProfileConfigs(
            default=self.default.model_copy(update=on),
            tenants={name: config.model_copy(update=on) for name, config in self.tenants.items()},
            agents={name: config.model_copy(update=on) for name, config in self.agents.items()},
        )


def _over(base: dict[str, Any], named: dict[str, Any]) -> dict[str, Any]:
    """`base` with the keys `named` names; a table (`prompts`) merged key by key, a list replaced."""
    merged = dict(base)
    for key, value in named.items():
        merged[key] = (
            _over(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


def _named(section: dict[str, Any]) -> dict[str, Any]:
    """The keys a section names, checked (a misspelt one raises ValidationError)."""
    return ProfileConfig.model_validate(section).model_dump(exclude_unset=True)


def _problems(error: ValidationError, where: str) -> str:
    return "; ".join(
        f"{'.'.join([where, *(str(part) for part in problem['loc'])]).strip('.') or '(top)'}: {problem['msg']}"
        for problem in error.errors()
    )


def profile_configs_of(
    default: dict[str, Any] | ProfileConfig | None,
    tenants: dict[str, dict[str, Any]],
    agents: dict[str, dict[str, Any]],
    *,
    where: dict[str, str],
) -> ProfileConfigs:
    """The configurations of plain data: the default's keys over the built-in configuration's, and
    each tenant's and agent's over the default's (a key a section does not name is the default's).
    `where` names, for an error, where the default, a tenant's and an agent's sections are written
    ({"default": "profile", "tenant": "tenants.{}", "agent": "personas.{}.profile"}). Raises
    ValueError naming each bad key there."""
    try:
        if isinstance(default, ProfileConfig):
            base = default
        else:  # the keys it names over the built-in configuration's
            base = ProfileConfig.model_validate(_over(default_profile_config().model_dump(), _named(default or {})))
    except ValidationError as error:
        raise ValueError(_problems(error, where["default"])) from None
    fields = base.model_dump(exclude_unset=False)
    configs = ProfileConfigs(default=base)
    for kind, sections in (("tenant", tenants), ("agent", agents)):
        for name, section in sections.items():
            try:
                config = ProfileConfig.model_validate(_over(fields, _named(section)))  # its own keys checked first
            except ValidationError as error:
                raise ValueError(_problems(error, where[kind].format(name))) from None
            (configs.tenants if kind == "tenant" else configs.agents)[name] = config
    return configs


def load_profile_configs(path: Path | str) -> ProfileConfigs:
    """The configurations of a TOML or JSON file (MEMLANE_PROFILE_CONFIG): the default's keys at the
    top (`strict`, the limits, `prompts`, `[[topics]]`), `[tenants.<id>]` and `[agents.<id>]`.
    Raises ValueError naming the file and each bad key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text) if Path(path).suffix == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as error:
        raise ValueError(f"profile configuration {path}: {error}") from None
    tenants, agents = data.pop("tenants", {}), data.pop("agents", {})
    try:
        return profile_configs_of(
            data, tenants, agents, where={"default": "", "tenant": "tenants.{}", "agent": "agents.{}"}
        )
    except ValueError as error:
        raise ValueError(f"profile configuration {path}: {error}") from None


SERVE_SECTIONS = {"default": "profile", "tenant": "tenants.{}.profile", "agent": "personas.{}.profile"}


def with_serve_sections(base: ProfileConfigs, serve_config: dict[str, Any]) -> ProfileConfigs:
    """`base` (MEMLANE_PROFILE_CONFIG's) under the sections of `memlane serve`'s configuration file,
    as parsed TOML: `[profile]` over the default, `[tenants.<id>.profile]` and
    `[personas.<id>.profile]` (a persona's own memory of each user is the agent of its id) over
    that. `memlane serve` and `memlane worker` both read them here, so a run is configured alike
    wherever it runs. Raises ValueError naming a bad key."""
    try:
        default = ProfileConfig.model_validate(
            _over(base.default.model_dump(), _named(serve_config.get("profile") or {}))
        )
    except ValidationError as error:
        raise ValueError(_problems(error, "profile")) from None
    tenants = {name: config.model_dump() for name, config in base.tenants.items()}
    tenants |= {
        name: table["profile"]
        for name, table in (serve_config.get("tenants") or {}).items()
        if table.get("profile") is not None
    }
    agents = {name: config.model_dump() for name, config in base.agents.items()}
    agents |= {
        name: table["profile"]
        for name, table in (serve_config.get("personas") or {}).items()
        if table.get("profile") is not None
    }
    return profile_configs_of(default, tenants, agents, where=SERVE_SECTIONS)


def configured_profile_configs(profile_config: Path | None, serve_file: Path | None = None) -> ProfileConfigs:
    """What the settings configure: `profile_config`'s file (MEMLANE_PROFILE_CONFIG, `graph.profile_config`;
    else the built-in slots), under the `[profile]` sections of `memlane serve`'s configuration file when
    `serve_file` (MEMLANE_SERVE_CONFIG, `serve.config_file`) names one (so `memlane worker` runs a
    tenant's or a persona's runs as `memlane serve` does). Raises ValueError naming the file and the bad key."""
    configs = load_profile_configs(profile_config) if profile_config else ProfileConfigs()
    if serve_file is None:
        return configs
    try:
        data = tomllib.loads(Path(serve_file).read_text(encoding="utf-8"))
        return with_serve_sections(configs, data)
    except (OSError, ValueError) as error:
        raise ValueError(f"{serve_file} (MEMLANE_SERVE_CONFIG): {error}") from None
