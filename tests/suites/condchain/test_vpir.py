"""The restricted VPIR evaluator: what it computes, and what it refuses."""

import pytest

from arena.suites.condchain.vpir import VPIRError, evaluate, holds, parse

FACTS = {
    "objects": [
        {"shape": "circle", "color": "red", "size": "large", "x": 120},
        {"shape": "square", "color": "blue", "size": "small", "x": 40},
        {"shape": "circle", "color": "red", "size": "small", "x": 300},
    ],
    "values": [12, 40, 33],
    "value_of": {"Jan": 12, "Feb": 40, "Mar": 33},
}


def test_evaluates_whitelisted_predicates():
    assert holds('len([o for o in objects if o["color"] == "red"]) == 2', FACTS)
    assert holds('any(o["shape"] == "square" and o["size"] == "small" for o in objects)', FACTS)
    assert holds('max(values) == value_of["Feb"] and sum(values) > 80', FACTS)
    assert holds('objects[1]["x"] < objects[0]["x"] < objects[2]["x"]', FACTS)
    assert holds('sorted(values, reverse=True)[:2] == [40, 33]', FACTS)
    assert holds('len(set(o["color"] for o in objects)) == 2', FACTS)
    assert not holds('all(o["size"] == "small" for o in objects)', FACTS)
    assert evaluate('{k: v for k, v in [("a", 1)]}["a"] + 2 ** 10', FACTS) == 1025
    assert evaluate('"red" if values[0] > 10 else "blue"', FACTS) == "red"


def test_non_boolean_predicate_is_an_error():
    with pytest.raises(VPIRError, match="not a bool"):
        holds("values[0]", FACTS)


def test_rejects_import_call():
    with pytest.raises(VPIRError, match="calling __import__ is not allowed"):
        parse("__import__('os')")


def test_rejects_attribute_access():
    with pytest.raises(VPIRError, match="attribute access is not allowed"):
        evaluate("value_of.keys()", FACTS)


def test_rejects_lambda():
    with pytest.raises(VPIRError, match="lambda is not allowed"):
        evaluate("sorted(values)[0] == (lambda: 12)()", FACTS)


def test_rejects_comprehension_escapes():
    with pytest.raises(VPIRError, match="attribute access"):
        parse("[c for c in ().__class__.__base__.__subclasses__()]")
    with pytest.raises(VPIRError, match="assignment expression"):
        evaluate("[(leak := v) for v in values]", FACTS)
    with pytest.raises(VPIRError, match="rebinding 'len'"):
        evaluate("[len for len in values]", FACTS)
    with pytest.raises(VPIRError, match="comprehension target other than plain names"):
        parse("[1 for x.y in [1]]")


def test_rejects_huge_exponentiation():
    with pytest.raises(VPIRError, match="exponent 100000 exceeds"):
        evaluate("2 ** 100000 > 1", FACTS)
    with pytest.raises(VPIRError, match="bits"):
        evaluate("(10 ** 200) ** 200 > 1", FACTS)
    with pytest.raises(VPIRError, match="exceeds the limit"):
        evaluate("len([0] * 10 ** 9) > 0", FACTS)


def test_rejects_unknown_names_and_private_names():
    with pytest.raises(VPIRError, match="calling open is not allowed"):
        evaluate("open('/etc/passwd')", FACTS)
    with pytest.raises(VPIRError, match="unknown name 'colour'.*facts: objects, value_of, values"):
        holds("colour == 'red'", FACTS)
    with pytest.raises(VPIRError, match="names starting with '_'"):
        parse("__builtins__")


def test_runtime_errors_name_the_position():
    with pytest.raises(VPIRError, match=r"line 1 col \d+: KeyError"):
        evaluate('value_of["Dec"] > 1', FACTS)
