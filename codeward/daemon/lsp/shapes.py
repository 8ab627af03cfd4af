"""LSP shapes at the seam with the servers: lsprotocol types and their cattrs converter.

Requests are built from lsprotocol types and `unstructure`d to JSON-able data; answers,
decoded from JSON, are `structure`d into lsprotocol types. A shape a server sends off the
spec (a field missing, of another type, null where none is allowed) becomes an
`lsp_error` naming the server and the method (`answer`), never a crash. Hot bulky answers
(thousands of locations) stay on msgspec Structs (`lsp.types`): bench/decode.py measures
both converters on the same bytes.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import cattrs
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from codeward.protocol.errors import ErrorKind, ToolError

T = TypeVar("T")


class OffSpec(Exception):
    """Data that does not have the LSP shape asked for; `detail` says where and why."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _converter() -> cattrs.Converter:
    converter = get_converter()
    # lsprotocol has a hook for a notebook filter, not for an optional one (the `notebook`
    # of a `notebookSelector` entry that names `cells` only, as ruff sends it).
    optional_filter = attrs.fields(lsp.NotebookDocumentFilterWithCells).notebook.type
    notebook_filter_type = attrs.fields(lsp.NotebookCellTextDocumentFilter).notebook.type

    def notebook_filter(value: Any, _: Any) -> Any:
        return None if value is None else converter.structure(value, notebook_filter_type)

    converter.register_structure_hook(optional_filter, notebook_filter)

    # lsprotocol takes any item with a `command` for a Command; a CodeAction's `command` is
    # an object, a Command's a string.
    def code_action(value: Any, _: Any) -> Any:
        bare = isinstance(value, dict) and isinstance(value.get("command"), str)
        return converter.structure(value, lsp.Command if bare else lsp.CodeAction)

    converter.register_structure_hook(lsp.Command | lsp.CodeAction, code_action)
    # cattrs makes a string or a boolean of anything (`str({...})`): here only of itself.
    converter.register_structure_hook(str, _exactly(str))
    converter.register_structure_hook(bool, _exactly(bool))
    return converter


def _exactly(type_: type) -> Any:
    def check(value: Any, _: Any) -> Any:
        if not isinstance(value, type_):
            raise TypeError(f"expected {type_.__name__}, got {_json_type(value)}")
        return value

    return check


CONVERTER = _converter()


def unstructure(value: Any) -> Any:
    """JSON-able data (camelCase keys, unset fields left out) of an lsprotocol value."""
    return CONVERTER.unstructure(value)


def structure(data: Any, type_: type[T] | Any) -> T:
    """`data` (decoded JSON) as `type_`; raises `OffSpec` when it does not fit."""
    an_object = attrs.has(type_)  # (no narrowing of `type_` for the return below)
    if an_object and not isinstance(data, dict):  # cattrs reads a string as `{}`
        raise OffSpec(f"expected an object, got {_json_type(data)}")
    try:
        return CONVERTER.structure(data, type_)
    except cattrs.BaseValidationError as exc:
        raise OffSpec("; ".join(cattrs.transform_error(exc)[:3])) from None
    except (cattrs.StructureHandlerNotFoundError, ValueError, TypeError, KeyError) as exc:
        # lsprotocol's own hooks look into the data before checking its type.
        raise OffSpec(f"{exc.__class__.__name__}: {exc}"[:200]) from None
    except AttributeError as exc:
        raise OffSpec(f"AttributeError: {exc}"[:200]) from None


def lenient(data: Any, type_: Any, field: str, item_type: Any) -> tuple[Any, list[str]]:
    """`data` as `type_`, leaving out the entries of its list `field` that do not fit
    `item_type`, and what is wrong with each of those: one odd diagnostic never costs a
    server the rest of its answer. Raises `OffSpec` when the rest does not fit."""
    try:
        return structure(data, type_), []
    except OffSpec:
        if not isinstance(data, dict) or not isinstance(data.get(field), list):
            raise
    kept: list[Any] = []
    wrong: list[str] = []
    for item in data[field]:
        try:
            kept.append(structure(item, item_type))
        except OffSpec as exc:
            wrong.append(exc.detail)
    shaped = structure({**data, field: []}, type_)
    return attrs.evolve(shaped, **{field: kept}), wrong


def _json_type(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, (int, float)):
        return "a number"
    return {str: "a string", list: "an array"}.get(type(data), type(data).__name__)


def result_type(method: str) -> Any:
    """The lsprotocol type of the result of the request `method` (e.g. `Hover | None`)."""
    response = lsp.METHOD_TO_TYPES[method][1]
    return attrs.fields(response).result.type


def document_params(method: str, uri: str, **fields: Any) -> Any:
    """The params of the request `method` about the document `uri`, built as the method's
    lsprotocol params type with `fields`, as JSON-able data."""
    params_type = lsp.METHOD_TO_TYPES[method][2]
    return unstructure(params_type(text_document=lsp.TextDocumentIdentifier(uri=uri), **fields))


def off_spec(server: str, method: str, detail: str, *, verb: str = "answered") -> ToolError:
    """The `lsp_error` for an answer to `method` (or, `verb="sent"`, a request `method` of
    the server's own) that does not have the LSP shape."""
    return ToolError(
        ErrorKind.LSP_ERROR,
        f"The {server} language server {verb} {method} with a shape off the LSP spec "
        f"({detail}); retry, or report it to the server's authors.",
        server=server,
        method=method,
    )


def answer(data: Any, server: str, method: str, type_: Any = None) -> Any:
    """A server's answer to `method` as its lsprotocol type (`type_`, else the method's
    result type); an `lsp_error` naming the server and the method when it does not fit."""
    try:
        return structure(data, result_type(method) if type_ is None else type_)
    except OffSpec as exc:
        raise off_spec(server, method, exc.detail) from None
