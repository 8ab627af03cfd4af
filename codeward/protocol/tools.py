"""Tool specs, and their rendering in the formats `tools/list` offers.

`tidy_schema` gives every property a `type` (enums included; `anyOf` of plain types becomes
a list of types); `strict_schema` is that schema as OpenAI's strict function calling wants
it: every property required, optional ones nullable, `additionalProperties: false` on every
object, and only the keywords it supports (the others' meaning moves into `description`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

_JSON_TYPES: dict[type, str] = {
    bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
}  # fmt: skip
# keywords OpenAI's strict mode refuses, and how their meaning reads in a description
_UNSUPPORTED: dict[str, str] = {
    "default": "Default: {}.",
    "minimum": "At least {}.",
    "maximum": "At most {}.",
    "exclusiveMinimum": "More than {}.",
    "exclusiveMaximum": "Less than {}.",
    "multipleOf": "A multiple of {}.",
    "minLength": "At least {} characters.",
    "maxLength": "At most {} characters.",
    "pattern": "Matching {}.",
    "format": "Format: {}.",
    "minItems": "At least {} items.",
    "maxItems": "At most {} items.",
    "uniqueItems": "Unique items: {}.",
    "minProperties": "At least {} properties.",
    "maxProperties": "At most {} properties.",
}
_DROPPED = ("title", "examples", "patternProperties", "propertyNames", "unevaluatedProperties")


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
    title: str | None = None
    # MCP's hints: readOnlyHint, destructiveHint, idempotentHint, openWorldHint
    annotations: dict[str, bool] | None = None
    # The argument that says whether a call writes (`apply`, `mode`): on MCP it has no
    # default, so a model states every write.
    write_switch: str | None = None


def stated(schema: dict[str, Any], switch: str) -> dict[str, Any]:
    """`schema` with the argument `switch` required and without its default."""
    properties = dict(schema.get("properties", {}))
    if switch not in properties:
        return schema
    prop = {k: v for k, v in properties[switch].items() if k != "default"}
    note = " Required: state whether this call writes."
    prop["description"] = (prop.get("description", "") + note).strip()
    properties[switch] = prop
    required = list(schema.get("required", []))
    if switch not in required:
        required.append(switch)
    return {**schema, "properties": properties, "required": required}


def render_tool(spec: ToolSpec, fmt: ToolFormat, *, strict: bool = False) -> dict[str, Any]:
    """One tool as the given format expects it (`strict`: OpenAI's strict function calling)."""
    if fmt is ToolFormat.OPENAI:
        function: dict[str, Any] = {
            "name": spec.name,
            "description": spec.description,
            "parameters": strict_schema(spec.input_schema) if strict else spec.input_schema,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}
    if fmt is ToolFormat.ANTHROPIC:
        return {
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }
    if fmt is ToolFormat.MCP:
        inputs = spec.input_schema
        if spec.write_switch is not None:
            inputs = stated(inputs, spec.write_switch)
        shown = {"name": spec.name, "description": spec.description, "inputSchema": inputs}
        if spec.output_schema is not None:
            shown["outputSchema"] = spec.output_schema
        if spec.title is not None:
            shown["title"] = spec.title
        if spec.annotations is not None:
            titled = {"title": spec.title} if spec.title is not None else {}
            shown["annotations"] = {**titled, **spec.annotations}
        return shown
    shown = {"name": spec.name, "description": spec.description, "input": spec.input_schema}
    if spec.output_schema is not None:
        shown["output"] = spec.output_schema
    if spec.title is not None:
        shown["title"] = spec.title
    if spec.annotations is not None:
        shown["annotations"] = spec.annotations
    return shown


def tidy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (recursively) with a `type` on every enum, and an `anyOf` whose branches are
    plain types (`{"type": "string"}`, `{"type": "null"}`...) merged into a list of types."""
    node = {key: _tidy_children(key, value) for key, value in schema.items()}
    branches = node.get("anyOf")
    if isinstance(branches, list) and branches and all(_mergeable(b) for b in branches):
        merged = _merge(branches)
        if merged is not None:
            del node["anyOf"]
            node = {**merged, **node}
    if "enum" in node and "type" not in node:
        types = sorted({_JSON_TYPES.get(type(v), "string") for v in node["enum"]})
        node["type"] = types[0] if len(types) == 1 else types
    return node


def _tidy_children(key: str, value: Any) -> Any:
    if key in ("properties", "$defs") and isinstance(value, dict):
        return {name: tidy_schema(sub) for name, sub in value.items()}
    if key in ("items", "additionalProperties") and isinstance(value, dict):
        return tidy_schema(value)
    if key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
        return [tidy_schema(sub) if isinstance(sub, dict) else sub for sub in value]
    return value


def _mergeable(branch: Any) -> bool:
    return isinstance(branch, dict) and isinstance(branch.get("type"), str | list)


def _merge(branches: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One schema for the union of `branches`, or None when their keywords would clash."""
    types: list[str] = []
    merged: dict[str, Any] = {}
    enum: list[Any] | None = None
    free = False  # a branch that allows every value of its (non-null) type
    for branch in branches:
        kinds = branch["type"] if isinstance(branch["type"], list) else [branch["type"]]
        types += [kind for kind in kinds if kind not in types]
        free = free or ("enum" not in branch and kinds != ["null"])
        for key, value in branch.items():
            if key == "type":
                continue
            if key == "enum":
                enum = [*(enum or []), *value]
            elif key in merged and merged[key] != value:
                return None
            else:
                merged[key] = value
    if enum is not None:
        if free:  # the enum would forbid the free branch's values
            return None
        merged["enum"] = enum + ([None] if "null" in types and None not in enum else [])
    return {"type": types[0] if len(types) == 1 else types, **merged}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as OpenAI's strict function calling accepts it (see the module's doc)."""
    return _strict(copy.deepcopy(schema))


def _strict(node: dict[str, Any]) -> dict[str, Any]:
    found = {key: node.pop(key) for key in list(_UNSUPPORTED) if key in node}
    notes = [
        _UNSUPPORTED[key].format(json.dumps(value))
        for key, value in found.items()
        if value is not None  # a null default: null (the strict form of "not given") says it
    ]
    for key in _DROPPED:
        node.pop(key, None)
    if notes:
        node["description"] = " ".join([node.get("description", "").strip(), *notes]).strip()
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _strict(node[key])
    for key in ("anyOf", "prefixItems"):
        if isinstance(node.get(key), list):
            node[key] = [_strict(sub) for sub in node[key]]
    if isinstance(node.get("$defs"), dict):
        node["$defs"] = {name: _strict(sub) for name, sub in node["$defs"].items()}
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, dict):
        properties = properties or {}
        required = set(node.get("required", []))
        node["properties"] = {
            name: _strict(sub if name in required else nullable(sub))
            for name, sub in properties.items()
        }
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also accepts null (what an optional property becomes in strict mode)."""
    kind = schema.get("type")
    if kind is None and "anyOf" in schema:
        if not any(branch.get("type") == "null" for branch in schema["anyOf"]):
            schema = {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
        return schema
    if kind is None:
        return {"anyOf": [schema, {"type": "null"}]}
    kinds = kind if isinstance(kind, list) else [kind]
    if "null" in kinds:
        return schema
    schema = {**schema, "type": [*kinds, "null"]}
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema
