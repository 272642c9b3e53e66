from arena.core.protocol import extract_answer, parse_response, split_thinking


def test_tool_call_with_thinking():
    action = parse_response('<think>zoom on the sign</think>\n<tool_call>\n{"name": "image_zoom_in_tool", '
                            '"arguments": {"bbox_2d": [1, 2, 3, 4]}}\n</tool_call>')
    assert action.kind == "tool_call"
    assert action.tool == "image_zoom_in_tool" and action.arguments == {"bbox_2d": [1, 2, 3, 4]}
    assert action.reasoning == "zoom on the sign"


def test_only_first_call_counts():
    text = ('<tool_call>{"name": "a", "arguments": {}}</tool_call>'
            '<tool_call>{"name": "b", "arguments": {}}</tool_call><tool_call>{"name": "c"}</tool_call>')
    action = parse_response(text)
    assert action.tool == "a" and action.ignored_calls == 2


def test_answer_strips_thinking_but_keeps_it():
    action = parse_response("<thinking>it is 1874</thinking>The answer: <answer> 1874 </answer>")
    assert action.kind == "answer" and action.answer == "1874" and action.reasoning == "it is 1874"


def test_answer_inside_thinking_is_not_the_answer():
    action = parse_response("<think><answer>wrong</answer></think><answer>right</answer>")
    assert action.answer == "right"


def test_template_opened_think_block():
    visible, thought = split_thinking("reasoning here</think><answer>x</answer>")
    assert thought == "reasoning here" and "<answer>x</answer>" in visible


def test_invalid_json_tool_call_names_the_position():
    action = parse_response("<tool_call>{name: oops}</tool_call>")
    assert action.kind == "invalid"
    assert "not valid JSON" in action.error and "line 1 column 2" in action.error


def test_unclosed_tool_call_is_parsed():
    action = parse_response('<tool_call>{"name": "text_search_tool", "arguments": {"query": "x"}}')
    assert action.kind == "tool_call" and action.arguments == {"query": "x"}


def test_arguments_as_json_string_and_bad_shapes():
    assert parse_response('<tool_call>{"name": "t", "arguments": "{\\"q\\": 1}"}</tool_call>').arguments == {"q": 1}
    assert parse_response('<tool_call>[1, 2]</tool_call>').kind == "invalid"
    assert parse_response('<tool_call>{"arguments": {}}</tool_call>').error == 'the tool call has no "name" string'
    assert "must be a JSON object" in parse_response('<tool_call>{"name": "t", "arguments": 3}</tool_call>').error


def test_untagged_text_is_the_answer_and_empty_is_invalid():
    action = parse_response("Paris")
    assert action.kind == "answer" and action.answer == "Paris" and not action.tagged
    assert parse_response("  <think>hmm</think>  ").kind == "invalid"


def test_whichever_comes_first_wins():
    assert parse_response('<answer>A</answer><tool_call>{"name": "t"}</tool_call>').kind == "answer"
    assert parse_response('<tool_call>{"name": "t"}</tool_call><answer>A</answer>').kind == "tool_call"


def test_huge_output_is_parsed_quickly():
    text = "<think>" * 200_000 + "x" * 5_000_000
    action = parse_response(text)
    assert action.kind == "answer"
    assert extract_answer("a" * 3_000_000 + "<answer>late</answer>")[0] != "late"
