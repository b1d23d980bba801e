"""Size-schema patterns on RE2: linear time, the verdicts of before, and refusals naming the pattern."""

from __future__ import annotations

import time
from typing import Any

import jsonschema._format
import jsonschema._keywords
import jsonschema._utils
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tally.ingest import SizeSchemaInvalid, compile_size_schema
from tally.ingest._schemas import size_error, size_validator

CATASTROPHIC = {"type": "object", "properties": {"flavor": {"type": "string", "pattern": "^(a+)+$"}}}

ORDINARY = {
    "type": "object",
    "properties": {"flavor": {"type": "string", "pattern": r"^m[0-9]\.[a-z]+$"}},
    "patternProperties": {"^x-": {"type": "integer"}, "_gb$": {"minimum": 1}},
    "additionalProperties": False,
}


def test_catastrophic_pattern_is_answered_in_linear_time() -> None:
    validator = compile_size_schema(CATASTROPHIC)
    started = time.perf_counter()
    error = size_error(validator, {"flavor": "a" * 30 + "!"})
    assert time.perf_counter() - started < 0.1
    assert error == f"size.flavor: {'a' * 30 + '!'!r} does not match '^(a+)+$'"
    assert size_error(validator, {"flavor": "a" * 30}) is None


@pytest.mark.parametrize(
    ("document", "where", "pattern"),
    [
        ({"properties": {"f": {"pattern": r"(a)\1"}}}, "properties/f/pattern", r"(a)\1"),
        ({"items": {"pattern": "(?=m1)"}}, "items/pattern", "(?=m1)"),
        ({"patternProperties": {"(?<!x)y": {}}}, "patternProperties", "(?<!x)y"),
        ({"properties": {"f": {"pattern": "("}}}, "properties/f/pattern", "("),
    ],
)
def test_pattern_re2_cannot_compile_is_refused_naming_it(
    document: dict[str, Any], where: str, pattern: str
) -> None:
    with pytest.raises(SizeSchemaInvalid) as raised:
        compile_size_schema(document)
    assert str(raised.value).startswith(
        f"size_schema at {where}: pattern {pattern!r} is not supported by RE2"
    )


def test_unevaluated_properties_that_patterns_reach_are_refused() -> None:
    with pytest.raises(
        SizeSchemaInvalid, match="size_schema at unevaluatedProperties: unevaluatedProperties"
    ):
        compile_size_schema({"patternProperties": {"^a": {}}, "unevaluatedProperties": False})
    plain = compile_size_schema({"properties": {"a": {}}, "unevaluatedProperties": False})
    assert (
        size_error(plain, {"a": 1, "b": 2})
        == "size: Unevaluated properties are not allowed ('b' was unexpected)"
    )


def test_stored_schema_re2_cannot_run_fails_the_item_not_the_loop() -> None:
    stored = size_validator({"properties": {"f": {"pattern": r"(a)\1"}}})
    assert size_error(stored, {"f": "aa"}) == (
        r"size.f: pattern '(a)\\1' is not supported by RE2 (linear-time regex engine): "
        r"invalid escape sequence: \1"
    )
    keys = size_validator({"patternProperties": {"(?=x)": {}}})
    assert size_error(keys, {"x": 1}) == (
        "size: pattern '(?=x)' is not supported by RE2 (linear-time regex engine): invalid perl operator: (?="
    )
    legacy = size_validator({"patternProperties": {"^(a+)+$": {}}, "unevaluatedProperties": False})
    assert size_error(legacy, {"a" * 30 + "!": 1}) == (
        "size: unevaluatedProperties is not supported where patternProperties or a reference can reach it "
        "(jsonschema would match those patterns with Python's re)"
    )


def test_no_user_pattern_runs_on_python_re(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoRe:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"re.{name} called")

    for module in (jsonschema._keywords, jsonschema._utils, jsonschema._format):
        monkeypatch.setattr(module, "re", NoRe())
    validator = compile_size_schema(ORDINARY)
    assert size_error(validator, {"flavor": "m1.small", "x-1": 2, "disk_gb": 20}) is None
    assert size_error(validator, {"flavor": "m1.small", "zz": 1}) == (
        "size: 'zz' does not match any of the regexes: '^x-', '_gb$'"
    )


@given(
    st.dictionaries(
        st.sampled_from(["flavor", "x-a", "x-", "disk_gb", "gb", "zz"]),
        st.one_of(
            st.sampled_from(["m1.small", "m2.x", "m1.", "mm.small", "xm1.small!"]),
            st.text(alphabet="m1.sal!", max_size=10),
            st.integers(-2, 3),
        ),
        max_size=4,
    )
)
def test_ordinary_patterns_give_the_verdicts_of_jsonschema(size: dict[str, Any]) -> None:
    ours = compile_size_schema(ORDINARY)
    stock = Draft202012Validator(ORDINARY)
    assert size_error(ours, size) == size_error(stock, size)


def test_dollar_ends_the_text_as_in_json_schema_not_before_a_newline() -> None:
    # ECMA-262 (which JSON Schema names) has no "before a final newline" rule; Python's re has.
    validator = compile_size_schema(ORDINARY)
    assert (
        size_error(validator, {"flavor": "m1.small\n"})
        == "size.flavor: 'm1.small\\n' does not match '^m[0-9]\\\\.[a-z]+$'"
    )
    assert size_error(Draft202012Validator(ORDINARY), {"flavor": "m1.small\n"}) is None
