"""CARV under `--protocol original`: no official evaluation code is public, so the original pipeline is the one
the paper describes (§4 "Evaluation" and Appendix A.1): an LLM judge compares the model's caption with the
reference caption and answers `{"correctness": true or false, "reason": ...}` (`carv-llm`); accuracy is the share
of tasks judged correct. The arena's deterministic caption parser (`carv-parse`) scores every task as well, as a
second judge, so the two can be compared (`arena judge RUN --judge carv-llm --judge carv-parse`). Under `arena` the
parser alone decides.
"""

from __future__ import annotations

from arena.dataset import Dataset
from judges.protocols import register_original_dataset_rule


def original_judges(dataset: Dataset) -> None:
    """The paper's LLM judge counts; the caption parser is computed beside it."""
    for task in dataset.tasks:
        task.judge = "carv-llm"
        task.metadata["judges"] = ["carv-llm", "carv-parse"]


register_original_dataset_rule("carv", original_judges)
