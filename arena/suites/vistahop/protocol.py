"""VistaHop's published turn handling, used under `--protocol original`.

Source: ahang0712/vistahop `evaluation/run_vistahop_eval.py` @1d6a961 (`parse_tool_call`, the turn loop of
`evaluate_tool`, `evaluate_sample`), read and restated here in our own words:

- A turn calls a tool only when the FIRST `<tool_call>` ... `</tool_call>` pair anywhere in its raw text (thinking
  included, any order with `<answer>`) holds text that parses as JSON. The search is case-sensitive and needs the
  closing tag: an unclosed `<tool_call>` is no call.
- Every other turn ends the episode and is scored as the final output: a turn with no call, an empty turn, an
  unclosed call, a call whose JSON does not parse, and a call whose JSON is empty (`{}`, `[]`, `""`, `0`, `null`).
- The tool name is the object's `"name"` (missing: the empty name, an unknown tool the model is told about; a name
  that is not a string matches no tool: an unknown tool, its arguments unread, shown as its JSON); the
  arguments are its `"arguments"` only (`"parameters"` is not read; missing: none). The zoom tool takes its box
  from `bbox_2d`, else `bbox`, and always crops the task image (`img_idx` is not read); a box its crop raises on
  (inverted, unreadable coordinates: `zoom_crash`) makes the sample fail, scored 0.
- A JSON value that is not an object makes the original's sample crash and score 0 on every method, as do
  arguments that are not an object for the two tools whose code reads them (zoom, text search); here such a turn is
  invalid and (under `original`) ends the episode with no answer. The image search and an unknown tool do not read
  the arguments: with arguments that are not an object the call goes on with none. (An object is passed on: the
  stored image search under the published layout ignores `img_idx`, as the original does; the arena's live and
  index modes, which have no published counterpart, read it.)
- The arena's own parse (`arena.core.protocol.parse_response`) differs on purpose; docs/protocols.md lists every difference.

Images (`process_image`, the evaluator's defaults): every image the model sees is smart-resized with factor 32
between 65,536 and 8,294,400 pixels (the arena's default is Qwen-VL's factor 28 up to 1280·28·28), unless the
agent is given its own sizes.

Loading (`load_datasets`, `evaluate_sample`): a dataset's scoring methods are its `reward_fn` and
`unused_reward_fn` together; none is an error, as is a name other than `em_score_mcq` / `llm_score`; every named
method is computed for every item. The question is the first user message's content when it is a string, else
empty; an `image` that is not a list gives no image and the item fails (scored 0).
"""

from __future__ import annotations

import json
import math
import re

from typing import Any

from arena.core.dataset import Dataset, DatasetError
from arena.core.untrusted import json_text_problem
from arena.core.protocol import MAX_PARSED_CHARS, ParsedAction, split_thinking
from arena.core.suite import PublishedRequest
from arena.judges.normalized import TURN_END, extract_answer_published

TEXT_SEARCH = "text_search_tool"
# The arguments each published tool reads (`evaluate_tool`): a call whose "arguments" is not an object fails the
# sample only for these tools; the image search and an unknown tool never read them (the call goes on).
READS_ARGUMENTS = {"image_zoom_in_tool": ("bbox_2d", "bbox", "label"), TEXT_SEARCH: ("query",)}
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
ZOOM = "image_zoom_in_tool"
CRASH = "crash"


def zoom_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """The zoom tool's arguments as the original reads them: the box from `bbox_2d`, else `bbox`; `label`; no
    `img_idx` (the original always crops the task image)."""
    box = arguments.get("bbox_2d") or arguments.get("bbox")
    kept = {"bbox_2d": box} if box is not None else {}
    return {**kept, **({"label": arguments["label"]} if "label" in arguments else {})}


def zoom_crash(arguments: dict[str, Any]) -> str | None:
    """Why the original's zoom would raise on these arguments (its sample then fails, every method 0), or None.

    The original takes the box from `bbox_2d`, else `bbox`; a box that is empty or not of length 4 is an
    "invalid bbox" observation (the episode goes on). Otherwise it reads each coordinate as a number (0-1000),
    raises the left/top edges to 0 and lowers the right/bottom edges to 1000, and crops: the crop raises when a
    coordinate is not a number or is infinite where it is used, or when the right (bottom) edge lies left of
    (above) the left (top) one. A box inverted by less than one pixel of the task image is an empty crop in the
    original, not a failure; the rule here, which does not know the image size, takes every inverted box as a
    failure."""
    box = arguments.get("bbox_2d") or arguments.get("bbox")
    if not box:
        return None
    try:
        if len(box) != 4:
            return None
        x1, y1, x2, y2 = (float(c) / 1000.0 for c in box)
    except (TypeError, ValueError) as exc:
        return f"the zoom box {box!r} cannot be read as four numbers ({exc})"
    x1, y1, x2, y2 = max(0, x1), max(0, y1), min(1, x2), min(1, y2)
    if any(math.isinf(v) for v in (x1, y1, x2, y2)):
        return f"the zoom box {box!r} has an infinite edge"
    if x2 < x1 or y2 < y1:
        return f"the zoom box {box!r} is inverted (right of its left edge / below its top edge reversed)"
    return None


def original_turn(text: str) -> ParsedAction:
    """Classify one raw model turn as the published VistaHop evaluator does (see the module docstring)."""
    text = text[:MAX_PARSED_CHARS]
    reasoning = split_thinking(text)[1]
    match = _CALL.search(text)
    note = None
    if match:
        body = match.group(1).strip()
        problem = json_text_problem(body, "the tool call")
        if problem:  # hostile output: bounded before any parse (the original's parser would crash on it)
            return ParsedAction("invalid", raw_call=body[:8192], reasoning=reasoning, error=f"{CRASH}: {problem}")
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            data, note = None, (f"the tool call is not valid JSON ({exc.msg}); the original pipeline ends the "
                                "episode here and scores this turn as the final output")
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            return ParsedAction("invalid", raw_call=body[:8192], reasoning=reasoning, error=f"{CRASH}: {exc}")
        if data:
            if not isinstance(data, dict):
                return ParsedAction("invalid", raw_call=body, reasoning=reasoning,
                                    error=f"{CRASH}: the tool call is not a JSON object; the original pipeline "
                                          "fails on this sample and scores it 0")
            name = data.get("name", "")
            arguments = data.get("arguments", {})
            if not isinstance(name, str):  # compared with the tool names only: an unknown tool, arguments unread
                name = json.dumps(name)
            if name in READS_ARGUMENTS and not isinstance(arguments, dict):
                return ParsedAction("invalid", tool=name, raw_call=body, reasoning=reasoning,
                                    error=f'{CRASH}: "arguments" of {name} is not a JSON object; the original '
                                          "pipeline reads it, fails on this sample and scores it 0")
            if not isinstance(arguments, dict):  # a tool that does not read them (image search, unknown): none
                arguments = {}
            if name == ZOOM:
                crash = zoom_crash(arguments)
                if crash:
                    return ParsedAction("invalid", tool=ZOOM, raw_call=body, reasoning=reasoning,
                                        error=f"{CRASH}: {crash}; the original pipeline's crop raises here, the "
                                              "sample fails and scores 0")
                arguments = zoom_arguments(arguments)
            return ParsedAction("tool_call", tool=name, arguments=arguments, raw_call=body, reasoning=reasoning,
                                ignored_calls=len(_CALL.findall(text)) - 1)
        if note is None:
            note = "the tool call is empty; the original pipeline ends the episode here"
    answer = extract_answer_published(text + TURN_END)
    return ParsedAction("answer", answer=answer or None, tagged="<answer>" in text, reasoning=reasoning,
                        error=note, raw_call=match.group(1).strip() if match else None)


METHOD_JUDGES = {"em_score_mcq": "mcq", "llm_score": "llm"}
# The published evaluator's image processing for the model (its defaults: --factor 32, --min-pixels 65536,
# --max-pixels 8294400): the task image, crops and thumbnails are smart-resized to these and sent as PNG.
ORIGINAL_IMAGE_SIZE = (32, 65_536, 8_294_400)


# The published script's agent request (`call_openai_api`, fed by `main`'s argparse defaults --max-tokens 4096,
# --temperature 0.7, --top-p 0.8, --top-k 20, --presence-penalty 1.5, --repetition-penalty 1.0, --seed 3407): these
# top-level JSON fields on every turn, no `chat_template_kwargs`.
SAMPLING_SOURCE = ("ahang0712/vistahop evaluation/run_vistahop_eval.py @1d6a961: `main` argparse defaults "
                   "(--max-tokens, --temperature, --top-p, --top-k, --presence-penalty, --repetition-penalty, "
                   "--seed), sent by `call_openai_api` as top-level fields")
PUBLISHED_SAMPLING = {"max_tokens": 4096, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5,
                      "repetition_penalty": 1.0, "seed": 3407}
PUBLISHED_REQUEST = PublishedRequest(PUBLISHED_SAMPLING, SAMPLING_SOURCE)  # the suite's `published_request`


def original_items(dataset: Dataset) -> None:
    """Read the items as the published loader does (question, image; see `loader.original_item_facts`), and
    mark them for the published agent request: image sizes, sampling fields and tool-result layout."""
    for task in dataset.tasks:
        task.layout.image_size = ORIGINAL_IMAGE_SIZE
        task.layout.sampling = dict(PUBLISHED_REQUEST.fields)
        task.layout.published_tool_results = True
        task.layout.question_alone_with_tools = True
        facts: dict[str, Any] = task.metadata.get("original") or {}
        if "question" in facts:
            task.question = facts["question"]
        if "unplayable" in facts:
            task.metadata["unplayable"] = facts["unplayable"]


def original_datasets_json(dataset: Dataset) -> None:
    """A `datasets.json` entry as the published evaluator takes it: refused without scoring methods or with an
    unknown one; every method of `reward_fn` + `unused_reward_fn` scores every item (`metadata["judges"]`)."""
    methods = list(dict.fromkeys([*dataset.reward_fn, *dataset.meta.get("unused_reward_fn", [])]))
    where = f"{dataset.source}: dataset {dataset.name!r}"
    if not methods:
        raise DatasetError(f"{where} has no scoring method (reward_fn or unused_reward_fn); the published evaluator "
                           "refuses such a dataset (--protocol arena scores it with the normalized judge)")
    unknown = sorted(set(methods) - set(METHOD_JUDGES))
    if unknown:
        raise DatasetError(f"{where}: unknown scoring method(s) {', '.join(unknown)} (known: "
                           f"{', '.join(METHOD_JUDGES)}); the published evaluator refuses them")
    judges = [METHOD_JUDGES[m] for m in methods]
    original_items(dataset)
    for task in dataset.tasks:
        task.judge = task.judge or judges[0]
        task.metadata["judges"] = judges
