"""Coercion of loosely typed tool arguments.

memdir's tool schemas declare real arrays and objects, but SwarmMemory-trained prompts
send JSON strings (``tags: '["ruby", "oop"]'``) and some models send a comma-separated
string (``"ruby, oop"``). Both are accepted; anything else gets a clear
`InputValidationError` that shows the expected shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memdir.core.errors import InputValidationError


def _json_error(name: str, exc: json.JSONDecodeError) -> InputValidationError:
    # "Invalid tool parameter JSON format" is SwarmMemory's wording.
    return InputValidationError(
        f"Invalid tool parameter JSON format for {name}: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
        f'Pass {name} as an array such as ["a", "b"], or as a JSON string of one.',
    )


def _array_error(name: str, value: Any) -> InputValidationError:
    return InputValidationError(
        f"{name} must be an array of strings, got {type(value).__name__} {value!r:.80}.",
        'Pass e.g. ["ruby", "oop"] (a JSON string of an array or "ruby, oop" also work).',
    )


def _items(name: str, values: list[Any] | tuple[Any, ...]) -> list[str]:
    items: list[str] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise _array_error(name, values)
        text = str(value).strip()
        if text and text not in items:
            items.append(text)
    return items


def coerce_str_list(value: Any, name: str) -> list[str]:
    """A list of non-empty, distinct, stripped strings from an array, a JSON string or a comma list.

    ``None`` and ``""`` give ``[]``. Numbers inside an array are turned into strings.

    Raises:
        InputValidationError: ``value`` is none of the accepted shapes, or is broken JSON.
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return _items(name, value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _json_error(name, exc) from exc
            if not isinstance(parsed, list):
                raise _array_error(name, parsed)
            return _items(name, parsed)
        return _items(name, text.split(","))
    raise _array_error(name, value)


def coerce_dict(value: Any, name: str) -> dict[str, Any]:
    """An object from a mapping or a JSON string of one; ``None`` and ``""`` give ``{}``.

    Raises:
        InputValidationError: ``value`` is not an object (or broken JSON).
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputValidationError(
                f"Invalid tool parameter JSON format for {name}: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
                f'Pass {name} as an object such as {{"Bash": {{"allowed_commands": ["^git "]}}}}.',
            ) from exc
        if isinstance(parsed, dict):
            return parsed
        value = parsed
    raise InputValidationError(
        f"{name} must be an object, got {type(value).__name__} {value!r:.80}.",
        f'Pass {name} as an object such as {{"Bash": {{"allowed_commands": ["^git "]}}}}.',
    )


_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off", ""}


def coerce_bool(value: Any, name: str) -> bool:
    """A boolean from a bool, 0/1 or the strings ``"true"``/``"false"`` (any case).

    Raises:
        InputValidationError: anything else.
    """
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InputValidationError(
        f"{name} must be true or false, got {value!r:.80}.", f"Pass {name}: true or {name}: false."
    )


__all__ = ["coerce_bool", "coerce_dict", "coerce_str_list"]
