"""The memory graph: wiring, policy, runs and background scheduling."""

from memlane.graph.build import build_memory_graph, compile_memory_graph, route_after_summary
from memlane.graph.policy import RunDecision, decide_run
from memlane.graph.run import MemoryStep, StepCallback, run_memory_graph
from memlane.graph.scheduler import MemoryScheduler
from memlane.graph.state import MemoryInput, MemoryState
from memlane.nodes.context import CONTEXT_PARTS, MemoryContext
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.profile_config import ProfileConfig, StepPrompts, SubtopicConfig, TopicConfig, default_profile_config
from memlane.nodes.profile_configs import ProfileConfigs, load_profile_configs, profile_configs_of, with_serve_sections

__all__ = [
    "CONTEXT_PARTS",
    "MemoryContext",
    "MemoryInput",
    "MemoryRunResult",
    "MemoryScheduler",
    "MemoryState",
    "MemoryStep",
    "ProfileConfig",
    "ProfileConfigs",
    "RunDecision",
    "StepCallback",
    "StepPrompts",
    "SubtopicConfig",
    "TopicConfig",
    "build_memory_graph",
    "compile_memory_graph",
    "decide_run",
    "default_profile_config",
    "load_profile_configs",
    "profile_configs_of",
    "route_after_summary",
    "run_memory_graph",
    "with_serve_sections",
]
