"""The suite contract: a benchmark is one class, registered once.

A built-in suite is named by an `arena` entry point in pyproject.toml; an out-of-tree suite is one package
whose `arena` entry point names its class. `register_suite` files what the class declares in the registries
the arena reads (loaders, judges, agents, tools, settings, worlds, world checks); what it declares for the
protocols, metrics and reports is read from the class (`SUITES`) where it is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from .agent import Agent, register_agent
from .dataset import Dataset, Loader, register_loader
from .discovery import claim
from .judge import Judge, register_judge
from .protocol import TurnRule
from .settings import register_alias, register_setting
from .tool import Tool, register_tool
from .world import WorldBuilder, WorldCheck, register_world, register_world_check


@dataclass(frozen=True)
class SuiteFigures:
    """One group of a run (agent, setting, budget) and the suite's figures for it (`summary.json` →
    `groups[].suites[name]`, computed by the suite's `metrics`)."""

    label: str
    figures: dict[str, Any]


@dataclass(frozen=True)
class PublishedRequest:
    """What a suite's published script sends with every agent request besides `model` and `messages`: `fields`
    (top-level JSON fields, e.g. sampling parameters; empty when it sends none), and where that was read (`source`:
    repository, file, commit and flags)."""

    fields: dict[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass
class PaperTable:
    """A table in the layout of the suite's paper: every cell a figure of the summary, formatted."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)


def cell(value: Any, digits: int = 2) -> str:
    """A figure as a table cell: fixed decimals for floats, a dash for a missing value."""
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


class Suite:
    """A benchmark: everything the arena knows of it, declared in one class, registered once.

    name            the `Task.suite` of its tasks, and the key of its figures in a run's summary
    loaders         the data formats it reads (`Loader(name, detect, load, published)`)
    judges          judge id -> factory taking the judge's options as keyword arguments
    agents          agent name -> factory: its policies (oracle, chance baselines) and its own agents
    tools, settings the tools it adds; setting name -> tool names; setting_aliases: short names for `a+b`
    worlds          world name -> `build(out, *, seed, size) -> Path`, deterministic from the seed
    world_checks    world name -> `WorldCheck`: baselines with Pass@1 bounds and the structural checks
    arena_variants  judge id -> options it is built with under `--protocol arena` (the published rule is
                    the judge's default; options a run gives always win)
    original_dataset_rules  loader name -> `rule(dataset)`, adjusting the loaded tasks (or raising
                    DatasetError) as the published loader reads the same file, under `--protocol original`;
                    this is where a suite fills the agent-facing `Task.layout` of its published requests
    original_turn_rule  raw model turn -> action, as the published pipeline reads text turns
    original_scores_failures  whether, under `--protocol original`, an episode that ended in an error (a failed
                    request: `arena.judges.metrics.ERRORED`) is still judged, because the published evaluator
                    scores a failed request (e.g. as a fixed prediction); False: left out
    published_request  the fields its published script sends with every agent request (`PublishedRequest`),
                    sent under `--protocol original` unless the run gives them; None: not known
    metrics         (episode, verdict) rows of one group -> the suite's own figures; called as
                    `metrics(rows, populations)` when the run recorded population records for the suite (a rule of
                    `original_dataset_rules` set `Dataset.population`: the file's questions its published evaluator
                    divides by, also those not run; run.json `datasets[].population`), else `metrics(rows)`
    paper_tables    those figures, per group, in the layout of the suite's paper
    """

    name: ClassVar[str]
    loaders: ClassVar[Sequence[Loader]] = ()
    judges: ClassVar[dict[str, Callable[..., Judge]]] = {}
    agents: ClassVar[dict[str, Callable[..., Agent]]] = {}
    tools: ClassVar[Sequence[type[Tool]]] = ()
    settings: ClassVar[dict[str, list[str]]] = {}
    setting_aliases: ClassVar[dict[str, list[str]]] = {}
    worlds: ClassVar[dict[str, WorldBuilder]] = {}
    world_checks: ClassVar[dict[str, WorldCheck]] = {}
    arena_variants: ClassVar[dict[str, dict[str, Any]]] = {}
    original_dataset_rules: ClassVar[dict[str, Callable[[Dataset], None]]] = {}
    original_turn_rule: ClassVar[TurnRule | None] = None
    original_scores_failures: ClassVar[bool] = False
    published_request: ClassVar[PublishedRequest | None] = None
    metrics: ClassVar[Callable[..., dict[str, Any]] | None] = None

    @classmethod
    def paper_tables(cls, groups: Sequence[SuiteFigures]) -> list[PaperTable]:
        """The suite's paper tables for these groups (none by default)."""
        return []


SUITES: dict[str, type[Suite]] = {}


def register_suite(suite: type[Suite]) -> type[Suite]:
    """Register a suite class and everything it declares; registering the same class again does nothing, another
    class under a taken name (suite, loader, judge, agent, tool, world) is an error naming both."""
    if SUITES.get(getattr(suite, "name", "")) is suite:
        return suite
    if not (isinstance(suite, type) and issubclass(suite, Suite)) or not isinstance(getattr(suite, "name", None), str):
        raise TypeError(f"{suite!r} is not a Suite subclass with a `name`")
    claim(SUITES, suite.name, suite, "suite")
    for loader in suite.loaders:
        register_loader(loader.name, loader.detect, loader.published)(loader.load)
    for name, judge in suite.judges.items():
        register_judge(name)(judge)
    for name, agent in suite.agents.items():
        register_agent(name)(agent)
    for tool in suite.tools:
        register_tool(tool)
    for name, tools in suite.settings.items():
        register_setting(name, tools)
    for name, tools in suite.setting_aliases.items():
        register_alias(name, tools)
    for name, build in suite.worlds.items():
        register_world(name)(build)
    for name, check in suite.world_checks.items():
        register_world_check(name, check)
    return suite


def suite_named(name: str) -> type[Suite] | None:
    """The registered suite whose tasks carry `suite == name`, if any."""
    return SUITES.get(name)
