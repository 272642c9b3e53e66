"""The task record: one question an agent must answer inside a world."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

TaskKind = Literal["open", "mcq", "boxed", "element_ids", "caption", "image"]


def level_for_hops(hops: int | None) -> str | None:
    """Difficulty by evidence hops H (the hop-based split of multi-hop visual search): L1 for H in [1, 5),
    L2 for [5, 10), L3 for H >= 10."""
    return None if hops is None or hops < 1 else "L1" if hops < 5 else "L2" if hops < 10 else "L3"


class RequestLayout(BaseModel):
    """How an agent lays out the task in its request where a suite's published pipeline differs from the
    arena's layout; filled by the suite (its `original_dataset_rules`), read by the agents, never stored.

    `image_labels`: a text part before each task image ("Image 1:", ...); `question_verbatim`: the question
    sent as is (no format instruction appended); `system_message`: False sends no system message when the
    episode has no tools; `images_as_files`: task images sent as their files' own bytes and type, not
    re-encoded; `image_size`: (factor, min pixels, max pixels) of the published image processing, used
    when the agent keeps its defaults; `sampling`: the top-level request fields the published script sends
    (the agent's explicit options win); `question_alone_with_tools`: the question sent alone when the episode
    has tools (without tools: the question, a line break and the dataset's format instruction);
    `published_tool_results`: tool results sent as their tools lay them out for the published script
    (`Observation.data["layout"]`), other results as a string `<tool_response>` message."""

    image_labels: list[str] = Field(default_factory=list)
    question_verbatim: bool = False
    system_message: bool = True
    images_as_files: bool = False
    image_size: tuple[int, int, int] | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    question_alone_with_tools: bool = False
    published_tool_results: bool = False


class Task(BaseModel):
    """A question, its images (paths relative to the dataset root) and accepted answers.

    `metadata` carries suite-specific extras: stored reverse-image results (`image_search`: list of {title,
    thumbnail}), gold evidence chains, gold tool paths, trajectory frames; `requires_agent` names the kind of agent
    whose results on the task mean what the task defines (the runner warns about any other). `evidence` lists the
    facts (entities, values) an answer must rest on, when known (generated worlds: the targets of the gold evidence
    chain), for the deterministic evidence verdict. `reference_images`: images a judge compares the answer with
    (absolute paths, never shown to the agent: e.g. a ground-truth image)."""

    id: str
    suite: str = "arena"
    question: str
    images: list[str] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)
    kind: TaskKind = "open"
    options: list[str] = Field(default_factory=list)
    level: str | None = None
    hops: int | None = None
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    judge: str | None = None
    evidence: list[str] = Field(default_factory=list)
    reference_images: list[str] = Field(default_factory=list)
    layout: RequestLayout = Field(default_factory=RequestLayout, exclude=True)
    """The published request layout of the task's suite, when it has one (not part of the task file)."""

    def model_post_init(self, __context: Any) -> None:
        if self.level is None:
            self.level = level_for_hops(self.hops)


class TaskRef(BaseModel):
    """What an episode keeps of its task, so the run store is self-contained for judging and metrics."""

    id: str
    suite: str
    question: str
    answers: list[str]
    kind: TaskKind = "open"
    options: list[str] = Field(default_factory=list)
    level: str | None = None
    hops: int | None = None
    category: str | None = None
    judge: str | None = None
    evidence: list[str] = Field(default_factory=list)
    reference_images: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, task: Task) -> "TaskRef":
        return cls(**task.model_dump(include=_TASK_REF_FIELDS))


_TASK_REF_FIELDS = frozenset(TaskRef.model_fields)
"""The fields a task passes on to its `TaskRef` (pydantic's field map read once, not per episode)."""
