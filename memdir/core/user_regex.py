"""Regular expressions a user (or an agent) supplies: bounded before they are compiled.

The `regex` engine compiles a counted repeat by writing its body out as many times as its
minimum count: ``a{10000000}`` took 6.8 s and 2.7 GB, ``((a{1000}){1000}){1000}`` ran a
machine out of memory (the OOM killer, not a MemoryError, ended it), and a few thousand
nested groups overflow the parser's recursion. Nothing can stop such a compile once it has
started, so `check_cost` reads the pattern first, in one linear pass, and refuses one
whose cost exceeds the `RegexBudget`:

* its length;
* every repetition count ``{m}``, ``{m,}``, ``{m,n}``;
* its size once counted repeats are written out (nested counts multiply: the body of
  ``(x{10}){20}`` is written 200 times, alternatives add up);
* how deeply groups nest;
* and it refuses recursion and subroutine calls (``(?R)``, ``(?1)``, ``(?&name)``,
  ``\\g<name>``: the `regex` engine's extensions, not Python's ``re`` syntax): a left
  recursion such as ``(?R)|a`` took 900 MB within one second of matching.

The pass over-estimates rather than parses exactly (a pattern that turns on verbose mode
is read both with and without it; ``{1 000}`` counts as a count): a cost it allows the
engine can pay; the engine itself rejects whatever is not a valid pattern.
`compile_regex` then compiles once, and every error the engine raises, MemoryError
included, becomes an `InputValidationError` that says what was wrong.

Matching is bounded by time (`memdir.search.text_search.GrepPattern`). In memory, the
engine keeps every capture of a repeated group (its ``captures()`` feature) and a
backtracking entry for every pass of a repeated group: ``(.)*`` took 443 MB on a line of
3,000,000 characters, ``(?:xy)*`` 181 MB on ``xyxy…``, ``(?:[ab]|\\d|.)*`` 343 MB on
``abab…`` (while ``(?:a|b)*`` takes nothing: which repeated groups the engine runs as a
flat loop cannot be told from outside). A search only asks whether lines match, so
`compile_search` compiles a pattern in which nothing refers back to a group with every
group made non-capturing (``(.)*`` then takes nothing), and bounds the line a pattern
that repeats a group may search (`SearchRegex.max_line`), shared among its repeated and
capturing groups: each may hold an entry per character of the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError

if TYPE_CHECKING:
    from memdir.core.settings import Settings

# Verbose mode ignores whitespace even between a count's digits: (?x)a{1 000} is a{1000}.
_COUNT = re.compile(r"\{([\d\s]*)(?:,([\d\s]*))?\}")
_VERBOSE_FLAG = re.compile(r"\(\?[a-zA-Z^-]*x")
# The engine's recursion and subroutine calls: (?R), (?1), (?-1), (?&name), (?P>name), \g<name>.
_CALL = re.compile(r"\(\?(?:R|[+-]?\d+|&|P>)")
# Where a named group opens, (?P<name> or (?<name> (not the lookbehinds (?<= and (?<!).
_NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])[^>]*>")
_SHOWN_CHARS = 80
_FIX_SYNTAX = "Escape special characters such as ( [ { . * + ? with a backslash, or search for a simpler pattern."


@dataclass(frozen=True)
class RegexBudget:
    """What one user pattern may cost (the ``regex_*`` settings) and how long its matching may run."""

    max_chars: int
    max_repeat: int
    max_size: int
    max_depth: int
    time_limit: float
    max_line_chars: int = 200_000

    @classmethod
    def from_settings(cls, settings: Settings) -> RegexBudget:
        return cls(
            max_chars=settings.limits.regex_max_chars,
            max_repeat=settings.limits.regex_max_repeat,
            max_size=settings.limits.regex_max_size,
            max_depth=settings.limits.regex_max_depth,
            time_limit=settings.limits.grep_time_limit,
            max_line_chars=settings.limits.grep_max_line_chars,
        )


def shown(pattern: str) -> str:
    """The pattern as messages quote it: a long one is cut (the user has it; the model's context is small)."""
    return repr(pattern if len(pattern) <= _SHOWN_CHARS else pattern[:_SHOWN_CHARS] + "…")


def _refuse(pattern: str, why: str, hint: str, what: str = "regular expression") -> InputValidationError:
    return InputValidationError(f"The {what} {shown(pattern)} is too costly to search with: {why}.", hint)


def check_length(pattern: str, budget: RegexBudget, what: str = "regular expression") -> None:
    """Refuse a pattern longer than the budget allows: also for globs, which become regexes
    (a 400,000-character glob took 2.7 s and 200 MB to compile)."""
    if len(pattern) > budget.max_chars:
        raise _refuse(
            pattern,
            f"it is {len(pattern):,} characters long, and at most {budget.max_chars:,} are allowed",
            "Search for a shorter pattern (or several shorter ones, one after another).",
            what,
        )


class _Group:
    """An open group while `check_cost` reads: its size so far and the size of its last item."""

    __slots__ = ("last", "size")

    def __init__(self) -> None:
        self.size = 0
        self.last = 0


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class ``[...]`` opening at ``start`` (the end if unclosed)."""
    at = start + 1
    if pattern.startswith("^", at):
        at += 1
    if pattern.startswith("]", at):  # a ']' first is a literal
        at += 1
    while at < len(pattern):
        if pattern[at] == "\\":
            at += 2
        elif pattern[at] == "]":
            return at + 1
        else:
            at += 1
    return len(pattern)


def _repeat_count(pattern: str, match: re.Match[str], budget: RegexBudget) -> int:
    """The minimum count of the repeat ``match`` spells, each of its counts checked against the budget."""
    low, high = ("".join(group.split()) if group else "" for group in match.groups())
    for digits in (low, high):
        if digits and (len(digits) > 9 or int(digits) > budget.max_repeat):
            raise _refuse(
                pattern,
                f"it repeats something {digits} times ({match.group(0)}), and at most {budget.max_repeat:,} "
                "repetitions are allowed",
                "Use a smaller count, or + or * for 'one or more' / 'any number'.",
            )
    return int(low) if low else 0


@dataclass
class _Reading:
    """What reading a pattern found besides its cost: what `compile_search` needs."""

    captures: list[tuple[int, int]] = field(default_factory=list)  # where each capturing group's opening is
    refers: bool = False  # a backreference (\\1, (?P=name)) or a conditional ((?(1)...)) names a group
    repeated_groups: int = 0  # groups that carry *, + or a count


def check_cost(pattern: str, budget: RegexBudget) -> _Reading:
    """Refuse ``pattern`` (`InputValidationError`) when compiling it could cost more than ``budget``.

    Linear in the pattern's length; see the module docstring for what is counted. A pattern
    that turns on verbose mode is read both ways: whitespace and ``#`` comments are then
    not items, so ``(?x)(a{1000}) {1000}`` repeats the group, not the space.
    """
    check_length(pattern, budget)
    reading = _scan(pattern, budget, verbose=False)
    if _VERBOSE_FLAG.search(pattern):
        verbose = _scan(pattern, budget, verbose=True)
        reading.refers |= verbose.refers
        reading.repeated_groups = max(reading.repeated_groups, verbose.repeated_groups)
    return reading


def _scan(pattern: str, budget: RegexBudget, *, verbose: bool) -> _Reading:
    reading = _Reading()
    groups = [_Group()]
    at = 0
    after_group = False  # the last item was a group: a quantifier now repeats it
    while at < len(pattern):
        char = pattern[at]
        group = groups[-1]
        item = 1
        if verbose and char.isspace():
            at += 1
            continue
        if verbose and char == "#":
            closing = pattern.find("\n", at)
            at = len(pattern) if closing < 0 else closing + 1
            continue
        follows_group, after_group = after_group, False
        if char == "\\":
            if pattern.startswith("g<", at + 1):
                raise _refuse_call(pattern)
            reading.refers |= pattern[at + 1 : at + 2].isdigit()
            at += 2
        elif char == "[":
            at = _class_end(pattern, at)
        elif char == "(" and pattern.startswith("(?#", at):  # a comment: no structure inside
            closing = pattern.find(")", at)
            at = len(pattern) if closing < 0 else closing + 1
            after_group = follows_group
            continue
        elif char == "(":
            if _CALL.match(pattern, at):
                raise _refuse_call(pattern)
            reading.refers |= pattern.startswith(("(?P=", "(?("), at)
            if not pattern.startswith(("(?", "(*"), at):
                reading.captures.append((at, at + 1))
            elif named := _NAMED_GROUP.match(pattern, at):
                reading.captures.append((at, named.end()))
            groups.append(_Group())
            if len(groups) - 1 > budget.max_depth:
                raise _refuse(
                    pattern,
                    f"its groups nest more than {budget.max_depth} deep",
                    "Remove parentheses that group nothing, or search for a simpler pattern.",
                )
            at += 1
            continue
        elif char == ")" and len(groups) > 1:
            item = groups.pop().size
            group = groups[-1]
            at += 1
            after_group = True
        elif char == "|":
            group.last = 0  # a quantifier after '|' repeats nothing; the engine says so
            at += 1
            continue
        elif char == "{" and (count := _COUNT.match(pattern, at)) and any(map(str.isdigit, count.group(0))):
            reading.repeated_groups += follows_group
            times = max(_repeat_count(pattern, count, budget), 1)
            group.size += group.last * (times - 1)
            group.last *= times
            at = count.end()
            _check_size(pattern, group.size, budget)
            continue
        else:
            reading.repeated_groups += follows_group and char in "*+"
            at += 1
        group.size += item
        group.last = item
        _check_size(pattern, group.size, budget)
    return reading


def _refuse_call(pattern: str) -> InputValidationError:
    return _refuse(
        pattern,
        "it calls a group or the whole pattern recursively ((?R), (?1), (?&name), \\g<name>), which can take "
        "unbounded memory while matching",
        "Write the group out again instead of calling it, or search with a simpler pattern.",
    )


def _check_size(pattern: str, size: int, budget: RegexBudget) -> None:
    # Every group's size goes into its parent's, so a group over the budget is a pattern over it.
    if size > budget.max_size:
        raise _refuse(
            pattern,
            f"written out, its counted repeats come to more than {budget.max_size:,} parts (nested counts multiply)",
            "Use smaller counts, fewer counted groups inside counted groups, or + or * instead of a count.",
        )


def compile_regex(pattern: str, budget: RegexBudget, flags: int = 0) -> Any:
    """``regex.compile(pattern, flags)`` once `check_cost` allows it; every engine error made a clear one.

    Returns:
        The compiled `regex.Pattern` (its ``search``/``findall`` take ``timeout=``).
    """
    check_cost(pattern, budget)
    return _compile(pattern, flags)


@dataclass(frozen=True)
class SearchRegex:
    """A pattern compiled for finding what matches, not what its groups captured."""

    compiled: Any  # a `regex.Pattern`
    max_line: int | None  # the longest line it may search; None: any (no group is repeated)


def compile_search(pattern: str, budget: RegexBudget, flags: int = 0) -> SearchRegex:
    """`compile_regex` for a search: where nothing refers back to a group, every group is made
    non-capturing (``(a|b)*`` as ``(?:a|b)*``: the same matches, without keeping a capture per
    character). A pattern that repeats a group may search lines of at most
    ``budget.max_line_chars`` divided by the number of groups it repeats and keeps capturing.
    """
    reading = check_cost(pattern, budget)
    compiled = None
    if reading.captures and not reading.refers:
        try:
            compiled = _compile(_without_captures(pattern, reading.captures), flags)
        except InputValidationError:  # read amiss (e.g. verbose spacing inside "( ?:"): the original decides
            pass
        if compiled is not None and compiled.groups:  # a group the reading missed: keep the original's numbering
            compiled = None
    if compiled is None:
        compiled = _compile(pattern, flags)
    held = reading.repeated_groups + compiled.groups  # what may hold an entry per character
    max_line = budget.max_line_chars // held if reading.repeated_groups else None
    return SearchRegex(compiled, max_line)


def _without_captures(pattern: str, captures: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    done = 0
    for start, end in captures:
        parts += [pattern[done:start], "(?:"]
        done = end
    return "".join(parts) + pattern[done:]


def _compile(pattern: str, flags: int) -> Any:
    import regex  # on the first pattern, not on the server's start-up path (~10-25 ms)

    try:
        # Not into the engine's cache: its 500 slots could hold 500 patterns of the largest size allowed.
        return regex.compile(pattern, flags, cache_pattern=False)
    except MemoryError as exc:
        raise _refuse(pattern, "compiling it ran out of memory", "Use smaller counts or a shorter pattern.") from exc
    except RecursionError as exc:
        raise InputValidationError(f"Invalid regular expression {shown(pattern)}: it nests too deeply.", _FIX_SYNTAX) from exc
    except Exception as exc:  # regex.error, OverflowError, ValueError...: whatever the engine refuses
        raise InputValidationError(f"Invalid regular expression {shown(pattern)}: {exc}.", _FIX_SYNTAX) from exc


__all__ = ["RegexBudget", "SearchRegex", "check_cost", "check_length", "compile_regex", "compile_search", "shown"]
