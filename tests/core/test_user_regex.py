"""What a user's regular expression may cost: refused before compiling when over the budget."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget, check_cost, compile_regex, compile_search

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


@pytest.mark.parametrize(
    ("pattern", "searched_as"),
    [
        ("(.)*", "(?:.)*"),
        ("(a|b)*", "(?:a|b)*"),
        ("((x)y)*", "(?:(?:x)y)*"),
        ("(?P<word>\\w+) (?<n>\\d)", "(?:\\w+) (?:\\d)"),
        ("[(]a(?:b)(?=c)(?<=a)(?<!d)(?#(x)(?i:e)(*FAIL)|z", "[(]a(?:b)(?=c)(?<=a)(?<!d)(?#(x)(?i:e)(*FAIL)|z"),
        ("(a)\\1", "(a)\\1"),  # a backreference: the groups stay
        ("(?P<q>['\"]).*?(?P=q)", "(?P<q>['\"]).*?(?P=q)"),
        ("(a)?(?(1)b|c)", "(a)?(?(1)b|c)"),
    ],
)
def test_a_search_keeps_no_capture_nothing_refers_to(pattern, searched_as):
    assert compile_search(pattern, BUDGET).compiled.pattern == searched_as


def test_only_a_pattern_that_repeats_a_group_has_a_longest_line_shared_among_its_repeated_and_kept_groups():
    budget = RegexBudget.from_settings(Settings(grep_max_line_chars=1000))
    assert compile_search("a+b*(c|d)x{3}", budget).max_line is None
    assert compile_search("(ab)+", budget).max_line == 1000
    assert compile_search("(?:ab){2,}", budget).max_line == 1000
    assert compile_search("(?x)(ab) # spaced\n *", budget).max_line == 1000
    assert compile_search("((a)*b)*", budget).max_line == 1000 // 2
    assert compile_search("(a)(b)*\\1", budget).max_line == 1000 // 3


# Pieces of patterns: groups of every kind, inline and scoped flags, verbose spacing and comments,
# classes with parentheses, anchors, lazy/possessive/counted repeats, references and conditionals.
_PIECES = ["a", "b", "é", ".", r"\w", r"\s", r"\b", "^", "$", "[(a]", r"\(", "[^b)]", "(?i)", "(?x) ", " ", "#c\n"]
_OPENERS = ["(", "(", "(?:", "(?P<n>", "(?<m>", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?i:", "(?|", "(?#"]
_QUANTIFIERS = ["", "", "*", "+", "?", "*?", "++", "{2}", "{0,3}", "{1,}"]
_REFERENCES = ["", "", "", r"\1", r"\2", "(?P=n)", "(?(1)a|b)", "(?(m)a)"]


def _generated_patterns():
    from hypothesis import strategies as st

    def grouped(inner):
        return st.tuples(st.sampled_from(_OPENERS), inner, st.sampled_from(_QUANTIFIERS)).map(lambda t: f"{t[0]}{t[1]}){t[2]}")

    body = st.recursive(
        st.sampled_from(_PIECES),
        lambda inner: st.one_of(
            grouped(inner),
            st.tuples(inner, st.sampled_from(_QUANTIFIERS)).map("".join),
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map("|".join),
        ),
        max_leaves=10,
    )
    return st.tuples(st.lists(grouped(body), min_size=1, max_size=3).map("".join), st.sampled_from(_REFERENCES)).map("".join)


def test_a_search_matches_exactly_the_lines_the_pattern_as_written_matches():
    """Property: making groups non-capturing changes no line's matches (nor how many there are)."""
    import regex
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pattern=_generated_patterns(), lines=st.lists(st.text("ab é()\t", max_size=12), max_size=4),
           ignore_case=st.booleans())
    def property_(pattern, lines, ignore_case):
        flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
        try:
            written = regex.compile(pattern, flags, cache_pattern=False)
        except regex.error:
            with pytest.raises(InputValidationError):
                compile_search(pattern, BUDGET, flags)
            return
        searched = compile_search(pattern, BUDGET, flags).compiled
        for line in lines:
            try:
                expected = [match.span() for match in written.finditer(line, timeout=1)]
                found = [match.span() for match in searched.finditer(line, timeout=1)]
            except TimeoutError:
                assume(False)
            assert found == expected, (pattern, searched.pattern, line)

    property_()
