"""Differential test: a tool call whose "arguments" is not an object, or that carries arguments a published tool
does not read, under `--protocol original` (the VistaHop turn rule, `suites/vistahop/protocol.py`).

Reference written from ahang0712/vistahop `evaluation/run_vistahop_eval.py` @1d6a961 (`evaluate_tool`), in our
own words: the call's "arguments" (default: none) is read only by the zoom tool (its box from `bbox_2d`, else
`bbox`, and `label`) and by the text search (`query`); reading a value that is not an object there raises and the
sample fails (scored 0). The image search and an unknown tool never read it: the episode goes on.
"""

from __future__ import annotations

import json

import pytest

from arena.suites.vistahop.protocol import original_turn

READS = {"image_zoom_in_tool": ("bbox_2d", "bbox", "label"), "text_search_tool": ("query",)}


def ref_outcome(call: dict) -> tuple[str, dict | None]:
    """("crash", None) when the published sample fails, else ("call", the arguments passed on to the arena's tool)."""
    name, arguments = call.get("name", ""), call.get("arguments", {})
    if name in READS:
        if not isinstance(arguments, dict):
            return "crash", None
        if name == "image_zoom_in_tool":  # the box from bbox_2d, else bbox (passed on as the arena tool's bbox_2d)
            box = arguments.get("bbox_2d") or arguments.get("bbox")
            return "call", {**({"bbox_2d": box} if box is not None else {}),
                            **({"label": arguments["label"]} if "label" in arguments else {})}
        return "call", arguments
    return "call", arguments if isinstance(arguments, dict) else {}  # not read: an object is passed on unread


ARGUMENTS = [[1, 2], "q", 7, None, True, {"img_idx": 3}, {"query": "Lyon", "top_k": 9}, {}, {"bbox": [1, 2, 3, 4]},
             {"bbox_2d": [10, 10, 500, 500], "label": "sign", "img_idx": 2}]
TOOLS = ["image_zoom_in_tool", "text_search_tool", "image_search_tool", "no_such_tool"]
CASES = [(tool, arguments) for tool in TOOLS for arguments in ARGUMENTS]


def test_enough_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("tool,arguments", CASES)
def test_non_object_arguments_fail_the_sample_only_where_the_published_tool_reads_them(tool, arguments):
    call = {"name": tool, "arguments": arguments}
    action = original_turn(f"<tool_call>{json.dumps(call)}</tool_call>")
    kind, read = ref_outcome(call)
    if kind == "crash":
        assert action.kind == "invalid" and action.error.startswith("crash:")
        return
    assert action.kind == "tool_call" and action.tool == tool and action.arguments == read
