"""What the doors (the app, ui/, and the service, serve/) use of the memory graph beyond
memlane's public API: a run's progress callback, the diagram, a queued run for a deployment's
workers, the per-tenant profile configurations, the memory model's tag and its check of what
forgetting by meaning found.

The doors may import only the memlane room and the store's data modules (records, errors, ids,
hits, scopes, protocols); this module is their one way to the graph and the nodes, so that the
public API (`memlane.__all__`) stays what the manual teaches. Not part of that API.
"""

from typing import TYPE_CHECKING, Any

# loaded on first use, as memlane's public names are: a door's command-line start-up pays for none
_LAZY = {
    "configured_profile_configs": "memlane.nodes.profile_configs",
    "ProfileConfigs": "memlane.graph",
    "StepCallback": "memlane.graph",
    "with_serve_sections": "memlane.graph",
    "render_svg": "memlane.graph.diagram",
    "queue_memory_run": "memlane.graph.tasks",
    "forget_confirmer": "memlane.nodes.confirm_forget",
    "MEMORY_MODEL_TAG": "memlane.nodes.llm",
}

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from memlane.config import Settings
    from memlane.graph import MemoryContext
    from memlane.graph import ProfileConfigs as ProfileConfigs
    from memlane.graph import StepCallback as StepCallback
    from memlane.graph import with_serve_sections as with_serve_sections
    from memlane.graph.diagram import render_svg as render_svg
    from memlane.graph.tasks import queue_memory_run as queue_memory_run
    from memlane.nodes.confirm_forget import forget_confirmer as forget_confirmer
    from memlane.nodes.llm import MEMORY_MODEL_TAG as MEMORY_MODEL_TAG
    from memlane.nodes.profile_configs import configured_profile_configs as configured_profile_configs
    from memlane.store.protocols import MemoryStore


def memory_context(settings: "Settings", store: "MemoryStore", llm: "BaseChatModel", **options: Any) -> "MemoryContext":
    """The memory graph's context a door builds from its settings: the parts the graph reads
    (its models, graph, scheduler and retention parts, and the store's) and, unless `options` give them, the profile
    configurations of `graph.profile_config` under the [profile] sections of `memlane serve`'s file
    (`serve.config_file`), so a worker runs a tenant's or a persona's runs as `memlane serve` does."""
    from memlane.graph import MemoryContext
    from memlane.nodes.profile_configs import configured_profile_configs

    if "fallback_llms" not in options:  # the models after the first of `memory_models` follow any memory model
        from memlane.models import memory_fallbacks_from_settings

        options["fallback_llms"] = memory_fallbacks_from_settings(settings.models)
    if options.get("profile_configs") is None and options.get("profile_config") is None:
        options["profile_configs"] = configured_profile_configs(
            settings.graph.profile_config, settings.serve.config_file
        )
    return MemoryContext(
        store=store,
        llm=llm,
        models=settings.models,
        graph=settings.graph,
        scheduler=settings.scheduler,
        retention=settings.retention,
        store_settings=settings.store,
        **options,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memlane.doors' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted([*_LAZY, "memory_context"])
