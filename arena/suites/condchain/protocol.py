"""MM-CondChain's published pipeline, used under `--protocol original`.

Source: Accio-Lab/MM-CondChain `eval/data_loader.py` (`resolve_gui_images`), `eval/utils.py`
(`build_message_content`, `build_eval_prompt`, `parse_answer`) and `eval/evaluator/api_evaluator.py`
(`get_answer`) @ac0aa82, restated in our own words:

- A GUI trajectory's frames are every png/jpg/jpeg file of its folder sorted by path as plain text (so
  `step_10.png` comes before `step_2.png`); each frame is preceded by a text part "Image i:" (i from 1), and the
  evaluation prompt follows the frames with no other framing line. (The arena sorts by the number in the name and
  says in one line that the images are the frames in order.)
- The request is one user message (no system message): after the frames, the text part is "\\n\\n" and the
  evaluation prompt; after a single image, the prompt alone; the prompt's final line break is kept and nothing
  else is added (no format instruction). A run with tools keeps the arena's system message (the original has
  no tool setting). Each image is the file's own bytes, base64, typed by its name (`.jpg` -> image/jpeg), not
  resized.
- The label is read from the whole raw reply (thinking included): the last `\\boxed{}` anywhere, e.g.
  `\\boxed{B2}<think>... \\boxed{A1}</think>` gives A1; an empty or thinking-only reply, or a request that
  failed, is the prediction "None" (`judge.py`, the published default of the `condchain` judge).
"""

from __future__ import annotations

from arena.core.dataset import Dataset
from arena.core.suite import PublishedRequest

from .loader import FRAMES_NOTE


# The published request (`get_answer`): `model` and `messages` only, no sampling field (the server's defaults).
PUBLISHED_REQUEST = PublishedRequest({}, "Accio-Lab/MM-CondChain eval/evaluator/api_evaluator.py @42a7ff5: "
                           "`get_answer` calls chat.completions.create(model, messages) and nothing else")


def original_frames(dataset: Dataset) -> None:
    """The published request: one user message (no system message), frames in file-name order each after
    "Image i:", then the text part as the original builds it ("\\n\\n" before the prompt after GUI frames; the
    prompt's own final line break kept), with no format instruction."""
    dataset.format_instruction = ""
    for task in dataset.tasks:
        task.layout.sampling = dict(PUBLISHED_REQUEST.fields)
        frames = task.metadata.get("frames")
        if frames:
            task.metadata["frames"] = sorted(frames)
        if not task.images:  # the arena's browse setting (frames through a tool) has no published counterpart
            continue
        task.layout = task.layout.model_copy(update=dict(system_message=False, question_verbatim=True,
                                                         images_as_files=True))
        if frames:
            task.images = sorted(task.images)
            task.layout.image_labels = [f"Image {i + 1}:" for i in range(len(task.images))]
            note = FRAMES_NOTE.format(count=len(frames))
            if task.question.startswith(note):
                task.question = "\n\n" + task.question[len(note):]
