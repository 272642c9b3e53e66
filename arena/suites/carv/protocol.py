"""CARV under `--protocol original`: no official evaluation code is public, so the original pipeline is the one
the paper describes (§4 "Evaluation" and Appendix A.1): an LLM judge is given the ground-truth image and the
reference caption with the model's caption, and answers `{"correctness": true or false, "reason": ...}`
(`carv-llm`, `reference_image=True`; its text the template `carv.judge.user`: the arena's wording unless the run's
prompts file gives the paper's, and table titles say so); accuracy is the share of tasks judged correct. An item whose label names an image
that is not there is refused (the paper's judge needs it). The arena's deterministic caption parser (`carv-parse`) scores every task as well, as a
second judge, so the two can be compared (`arena judge RUN --judge carv-llm --judge carv-parse`). Under `arena` the
parser alone decides.
"""

from __future__ import annotations

from arena.core.dataset import Dataset, DatasetError


def original_judges(dataset: Dataset) -> None:
    """The paper's LLM judge counts (with each task's ground-truth image); the caption parser is computed beside
    it."""
    for task in dataset.tasks:
        label = task.metadata.get("label_stem")
        if label and not task.reference_images:
            raise DatasetError(f"{dataset.source}: task {task.id!r} field label: no image file for {label!r} "
                               f"under {dataset.root} (the paper's judge is given the ground-truth image; "
                               "--protocol arena scores without it)")
        task.judge = "carv-llm"
        task.metadata["judges"] = ["carv-llm", "carv-parse"]
