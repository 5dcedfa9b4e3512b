"""Coercion of array/object/bool arguments: real values, JSON strings, comma lists."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.tools.params import coerce_bool, coerce_dict, coerce_str_list


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["ruby", "oop"], ["ruby", "oop"]),
        (("ruby", "oop"), ["ruby", "oop"]),
        ('["ruby", "oop"]', ["ruby", "oop"]),
        ('  ["ruby","oop"] ', ["ruby", "oop"]),
        ("ruby, oop", ["ruby", "oop"]),
        ("ruby", ["ruby"]),
        ("[]", []),
        ("", []),
        ("   ", []),
        (None, []),
        ([], []),
        ([" ruby ", "", "ruby", "oop"], ["ruby", "oop"]),
        (["v2", 3], ["v2", "3"]),
        ("a,,b,", ["a", "b"]),
    ],
)
def test_str_list_accepts_arrays_json_and_comma_lists(value, expected):
    assert coerce_str_list(value, "tags") == expected


def test_broken_json_array_names_the_parameter():
    with pytest.raises(InputValidationError) as caught:
        coerce_str_list('["ruby", "oop"', "tags")
    assert caught.value.message.startswith("Invalid tool parameter JSON format for tags: ")
    assert caught.value.hint == 'Pass tags as an array such as ["a", "b"], or as a JSON string of one.'


@pytest.mark.parametrize("value", [{"a": 1}, 42, True, '[{"a": 1}]', "[1, [2]]", [None], [["nested"]]])
def test_str_list_refuses_other_shapes(value):
    with pytest.raises(InputValidationError) as caught:
        coerce_str_list(value, "related")
    assert caught.value.message.startswith("related must be an array of strings, got ")
    assert caught.value.hint == 'Pass e.g. ["ruby", "oop"] (a JSON string of an array or "ruby, oop" also work).'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"Bash": {"allowed_commands": ["^git "]}}, {"Bash": {"allowed_commands": ["^git "]}}),
        ('{"Bash": {"allowed_commands": ["^git "]}}', {"Bash": {"allowed_commands": ["^git "]}}),
        ("{}", {}),
        ("", {}),
        (None, {}),
    ],
)
def test_dict_accepts_objects_and_json_strings(value, expected):
    assert coerce_dict(value, "permissions") == expected


@pytest.mark.parametrize("value", ['["a"]', "[1]", 3, ["a"]])
def test_dict_refuses_non_objects(value):
    with pytest.raises(InputValidationError) as caught:
        coerce_dict(value, "permissions")
    assert caught.value.message.startswith("permissions must be an object, got ")


def test_dict_reports_broken_json():
    with pytest.raises(InputValidationError) as caught:
        coerce_dict("{Bash: 1}", "permissions")
    assert caught.value.message.startswith("Invalid tool parameter JSON format for permissions: ")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), ("true", True), ("False", False), ("1", True), (0, False), (1, True), (None, False)],
)
def test_bool(value, expected):
    assert coerce_bool(value, "replace_all") is expected


def test_bool_refuses_other_values():
    with pytest.raises(InputValidationError) as caught:
        coerce_bool("maybe", "replace_all")
    assert str(caught.value) == (
        "replace_all must be true or false, got 'maybe'. Pass replace_all: true or replace_all: false."
    )
