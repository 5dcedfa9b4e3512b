"""What a user's regular expression may cost: refused before compiling when over the budget."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget, check_cost, compile_regex

BUDGET = RegexBudget.from_settings(Settings())


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("a{10000000}", "repeats something 10000000 times"),
        ("a{1000000000}", "repeats something 1000000000 times"),
        ("a{99999999999}", "repeats something 99999999999 times"),
        ("a{2,5000}", "repeats something 5000 times"),
        ("a{5000,}", "repeats something 5000 times"),
        ("((a{1000}){1000}){1000}", "counted repeats come to more than 50,000 parts"),
        ("(?:ab{100}c){1000}x", "counted repeats come to more than 50,000 parts"),
        ("(?x)(a{1000}) {1000}", "counted repeats come to more than 50,000 parts"),  # the space is no item
        ("(?x)(a{1000})#note\n{1000}", "counted repeats come to more than 50,000 parts"),
        ("(?x)a{1 000 000}", "repeats something 1000000 times"),  # verbose: digits may be spaced
        ("(" * 5000 + ")" * 5000, "groups nest more than 100 deep"),
        ("|".join(f"w{i}" for i in range(100_000)), "characters long, and at most 10,000 are allowed"),
        ("(?R)|a", "calls a group or the whole pattern recursively"),
        ("(?:x|(?1))", "calls a group or the whole pattern recursively"),
        ("(?P<n>a|(?&n))", "calls a group or the whole pattern recursively"),
        ("(?P<n>a|(?P>n))", "calls a group or the whole pattern recursively"),
        (r"(a)\g<1>", "calls a group or the whole pattern recursively"),
    ],
)
def test_costly_patterns_are_refused_before_compiling(pattern, why):
    with pytest.raises(InputValidationError, match="too costly to search with") as caught:
        check_cost(pattern, BUDGET)
    assert why in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d{4}-\d{2}-\d{2}", r".{0,80}", r"[a-z]{2,10}\b", r"(?:ab|cd){3}", r"a{,5}", r"x{1000}", r"\p{L}+",
        r"[{]{5}", r"\{100000\}", r"(?#a{9999999})b", r"(?:\w{10}|\d{10}){1000}", "(" * 100 + ")" * 100,
        "|".join(f"name{i}" for i in range(1000)), r"(?:abc){e<=1}",
    ],
)
def test_ordinary_patterns_pass(pattern):
    check_cost(pattern, BUDGET)
    compile_regex(pattern, BUDGET)


def test_the_limits_are_settings():
    tight = RegexBudget.from_settings(Settings(regex_max_repeat=10, regex_max_size=100, regex_max_depth=2, regex_max_chars=50))
    for pattern in ("a{11}", "(a{10}){11}", "(((a)))", "a" * 51):
        with pytest.raises(InputValidationError):
            check_cost(pattern, tight)
    check_cost("(a{10}){10}", tight)


def test_a_long_pattern_is_quoted_shortened():
    with pytest.raises(InputValidationError) as caught:
        compile_regex("(" * 200, BUDGET)
    assert len(caught.value.message) < 250


@pytest.mark.parametrize("pattern", ["(unclosed", "[z-a]", "*a"])
def test_engine_errors_become_clear_messages(pattern):
    with pytest.raises(InputValidationError, match="Invalid regular expression") as caught:
        compile_regex(pattern, BUDGET)
    assert "Escape special characters" in caught.value.hint
