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
        return {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
        }
    return {"name": spec.name, "description": spec.description, "input": spec.input_schema}
