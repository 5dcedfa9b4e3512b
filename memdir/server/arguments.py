"""Clear messages for tool arguments that do not fit a tool's input schema (or are not in it).

The SDK answers a missing or mistyped argument with pydantic's own report ("2 validation
errors for MemoryWriteArguments ... Field required [type=missing, input_value=...] For
further information visit https://errors.pydantic.dev/..."): accurate, but written for a
Python developer. The model calling the tool needs to know which parameters were wrong,
what each one is for, and what to send instead.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def invalid_arguments_message(tool: str, error: ValidationError, schema: dict[str, Any] | None) -> str:
    """What was wrong with a call's arguments, parameter by parameter, and how to call it instead."""
    properties: dict[str, Any] = (schema or {}).get("properties", {})
    required: list[str] = (schema or {}).get("required", [])
    lines = [f"Invalid arguments for {tool}:"]
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"]) or "(arguments)"
        described = properties.get(str(problem["loc"][0]), {}).get("description") if problem["loc"] else None
        what = "missing (required)" if problem["type"] == "missing" else problem["msg"]
        lines.append(f"- {name}: {what}" + (f". It is: {described}" if described else ""))
    if required:
        lines.append(f"Call {tool} again with every required parameter: {', '.join(required)}.")
    return "\n".join(lines)


def unknown_arguments_message(tool: str, unknown: list[str], schema: dict[str, Any]) -> str:
    """An argument the tool does not take would be ignored without a word: say so instead."""
    names = ", ".join(repr(name) for name in unknown)
    return (
        f"{tool} does not take {names}, so nothing would use {'them' if len(unknown) > 1 else 'it'}.\n"
        f"{tool} takes: {', '.join(schema.get('properties', {}))}."
    )


__all__ = ["invalid_arguments_message", "unknown_arguments_message"]
