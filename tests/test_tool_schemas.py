"""Tool schemas in every format: valid JSON Schema (Draft 2020-12), every property described
and typed, and OpenAI's strict form obeying strict function calling's rules."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from codeward.daemon.tools.registry import REGISTRY
from codeward.protocol.tools import ToolFormat, nullable, render_tool, strict_schema, tidy_schema
from tests.conftest import OpenClient
from tests.rpc import RpcFailure

TOOLS = list(REGISTRY)
# what strict mode accepts (OpenAI's structured outputs subset)
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
    "description", "$defs", "$ref", "const",
}  # fmt: skip


def schemas_of(shown: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Schemas one rendered tool carries (input, and output where given)."""
    if shown.get("type") == "function":
        return [shown["function"]["parameters"]]
    keys = ("input", "output", "input_schema", "inputSchema", "outputSchema")
    return [shown[k] for k in keys if k in shown]


def walk(schema: Any) -> list[dict[str, Any]]:
    """Every schema node under `schema`, itself included."""
    if not isinstance(schema, dict):
        return []
    nodes = [schema]
    for key in ("items", "additionalProperties"):
        nodes += walk(schema.get(key))
    for key in ("properties", "$defs"):
        for sub in (schema.get(key) or {}).values():
            nodes += walk(sub)
    for sub in schema.get("anyOf") or []:
        nodes += walk(sub)
    return nodes


def sample(schema: dict[str, Any]) -> Any:
    """A valid value of a simple schema, for required arguments."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema["type"][0] if isinstance(schema["type"], list) else schema["type"]
    return {"string": "a.py", "integer": 1, "boolean": False, "array": []}[kind]


@pytest.mark.parametrize("fmt", list(ToolFormat))
@pytest.mark.parametrize("strict", [False, True])
def test_every_format_is_valid_draft_2020_12(fmt: ToolFormat, strict: bool) -> None:
    for tool in TOOLS:
        for schema in schemas_of(render_tool(tool.spec(), fmt, strict=strict)):
            Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_property_is_described_and_typed(tool: Any) -> None:
    schema = tool.spec().input_schema
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["properties"], tool.name
    for name, prop in schema["properties"].items():
        assert prop.get("description", "").strip(), (tool.name, name)
        assert "type" in prop, (tool.name, name, prop)
        for node in walk(prop):
            if "enum" in node:
                assert "type" in node, (tool.name, name, node)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_openai_strict_rules(tool: Any) -> None:
    shown = render_tool(tool.spec(), ToolFormat.OPENAI, strict=True)
    assert shown["function"]["strict"] is True
    schema = shown["function"]["parameters"]
    native = tool.spec().input_schema
    for node in walk(schema):
        assert set(node) <= STRICT_KEYWORDS, (tool.name, set(node) - STRICT_KEYWORDS)
        if node.get("type") == "object" or "properties" in node:
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
    validator = Draft202012Validator(schema)
    optional = set(native["properties"]) - set(native["required"])
    given = {n: sample(native["properties"][n]) for n in native["required"]}
    as_model_sends = given | dict.fromkeys(optional)  # every optional one null
    validator.validate(as_model_sends)
    if optional:
        assert not validator.is_valid(given), "every property is required in strict mode"
    # ... and the daemon takes those nulls as "not given": the defaults apply
    arguments = REGISTRY.validate(tool, as_model_sends)
    defaults = REGISTRY.validate(tool, given)
    assert arguments == defaults


async def test_tools_list_strict_over_the_wire(open_client: OpenClient) -> None:
    client = await open_client()
    listed = await client.call("tools/list", {"format": "openai", "strict": True})
    by_name = {t["function"]["name"]: t["function"] for t in listed["tools"]}
    diagnostics = by_name["get_diagnostics"]
    assert diagnostics["strict"] is True
    limit = diagnostics["parameters"]["properties"]["limit"]
    assert limit["type"] == ["integer", "null"] and "Default: 500." in limit["description"]
    loose = await client.call("tools/list", {"format": "openai"})
    assert "strict" not in loose["tools"][0]["function"]
    with pytest.raises(RpcFailure) as info:
        await client.call("tools/list", {"format": "openai", "strict": "yes"})
    assert info.value.code == -32602


def test_tidy_and_strict_edge_cases() -> None:
    enum_or_null = {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]}
    assert tidy_schema(enum_or_null) == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert tidy_schema({"enum": [1, "x"]})["type"] == ["integer", "string"]
    ref = {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}
    assert tidy_schema(ref) == ref  # a reference is kept as a branch
    free = {"anyOf": [{"enum": ["a"]}, {"type": "string", "description": "d"}]}
    assert "anyOf" in tidy_schema(free)  # merging would forbid the free strings
    assert nullable({"$ref": "#/$defs/X"}) == {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}
    assert nullable(ref) == ref
    nested = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"line": {"type": "integer", "minimum": 1}},
                },
            }
        },
    }
    strict = strict_schema(nested)
    edits = strict["properties"]["edits"]
    assert edits["type"] == ["array", "null"] and edits["description"] == "At least 1 items."
    item = edits["items"]
    assert item["required"] == ["line"] and item["additionalProperties"] is False
    assert item["properties"]["line"] == {
        "type": ["integer", "null"],
        "description": "At least 1.",
    }
    assert nested["properties"]["edits"]["minItems"] == 1  # the input is left as it was
