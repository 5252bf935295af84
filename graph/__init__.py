"""The memory graph: wiring, policy, runs and background scheduling."""

from memlane.graph.build import build_memory_graph, compile_memory_graph, route_after_summary
from memlane.graph.policy import RunDecision, decide_run
from memlane.graph.run import MemoryStep, StepCallback, run_memory_graph
from memlane.graph.state import MemoryInput, MemoryState
from memlane.graph.scheduler import MemoryScheduler
from memlane.nodes.context import MemoryContext
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.profile_config import ProfileConfig, SubtopicConfig, TopicConfig, default_profile_config

__all__ = [
    "MemoryContext",
    "MemoryInput",
    "MemoryRunResult",
    "MemoryScheduler",
    "MemoryState",
    "MemoryStep",
    "ProfileConfig",
    "RunDecision",
    "StepCallback",
    "SubtopicConfig",
    "TopicConfig",
    "build_memory_graph",
    "compile_memory_graph",
    "decide_run",
    "default_profile_config",
    "route_after_summary",
    "run_memory_graph",
]
