"""MM-CondChain's published pipeline, used under `--protocol original`.

Source: Accio-Lab/MM-CondChain `eval/data_loader.py` (`resolve_gui_images`), `eval/utils.py`
(`build_message_content`, `build_eval_prompt`, `parse_answer`) and `eval/evaluator/api_evaluator.py`
(`get_answer`) @ac0aa82, restated in our own words:

- A GUI trajectory's frames are every png/jpg/jpeg file of its folder sorted by path as plain text (so
  `step_10.png` comes before `step_2.png`); each frame is preceded by a text part "Image i:" (i from 1), and the
  evaluation prompt follows the frames with no other framing line. (The arena sorts by the number in the name and
  says in one line that the images are the frames in order.)
- The prompt is the published evaluation prompt alone: no further format instruction.
- The label is read from the whole raw reply (thinking included): the last `\\boxed{}` anywhere, e.g.
  `\\boxed{B2}<think>... \\boxed{A1}</think>` gives A1; an empty or thinking-only reply, or a request that
  failed, is the prediction "None" (`judge.py`, the published default of the `condchain` judge).
"""

from __future__ import annotations

from arena.dataset import Dataset
from judges.protocols import register_original_dataset_rule

from .loader import FRAMES_NOTE


def original_frames(dataset: Dataset) -> None:
    """Frames in file-name order, labelled "Image i:", the prompt without the arena's framing line."""
    dataset.format_instruction = ""
    for task in dataset.tasks:
        frames = task.metadata.get("frames")
        if not frames:
            continue
        if task.images:
            task.images = sorted(task.images)
            task.metadata["image_labels"] = [f"Image {i + 1}:" for i in range(len(task.images))]
            note = FRAMES_NOTE.format(count=len(frames))
            if task.question.startswith(note):
                task.question = task.question[len(note):]
        task.metadata["frames"] = sorted(frames)


register_original_dataset_rule("condchain", original_frames)
