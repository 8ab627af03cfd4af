"""Tool specs, and their rendering in the formats `tools/list` offers."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ToolFormat(StrEnum):
    NATIVE = "native"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    MCP = "mcp"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None


def render_tool(spec: ToolSpec, fmt: ToolFormat) -> dict[str, Any]:
    """One tool as the given format expects it."""
    if fmt is ToolFormat.OPENAI:
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.input_schema,
            },
        }
    if fmt is ToolFormat.ANTHROPIC:
        return {
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }
    if fmt is ToolFormat.MCP:
        shown = {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
        }
        if spec.output_schema is not None:
            shown["outputSchema"] = spec.output_schema
        return shown
    shown = {"name": spec.name, "description": spec.description, "input": spec.input_schema}
    if spec.output_schema is not None:
        shown["output"] = spec.output_schema
    return shown
