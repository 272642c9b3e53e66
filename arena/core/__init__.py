"""The arena's core: records (Task, Budget, Step, Episode, Verdict), the episode loop, interfaces, registries."""

from .agent import Agent, AgentError, AgentTurn, EpisodeView, register_agent
from .budget import Budget
from .dataset import Dataset, DatasetError, load_datasets, register_loader
from .episode import EpisodeSpec, run_episode
from .judge import Judge, register_judge
from .task import Task, TaskRef, level_for_hops
from .tool import (RunResources, Tool, ToolArgumentError, ToolContext, ToolError, ToolOptions, ToolResult,
                   register_tool)
from .trajectory import Episode, Observation, Step, Totals, Usage, episode_key
from .verdict import Verdict

__all__ = [
    "Agent", "AgentError", "AgentTurn", "Budget", "Dataset", "DatasetError", "Episode", "EpisodeSpec",
    "EpisodeView", "Judge", "Observation", "RunResources", "Step", "Task", "TaskRef", "Tool", "ToolArgumentError",
    "ToolContext",
    "ToolError", "ToolOptions", "ToolResult", "Totals", "Usage", "Verdict", "episode_key", "level_for_hops",
    "load_datasets", "register_agent", "register_judge", "register_loader", "register_tool", "run_episode",
]
