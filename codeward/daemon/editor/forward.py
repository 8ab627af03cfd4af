"""The editor's requests, sent to the right server(s) of the root through its session's
`LanguageService`, and their answers back.

A document's request goes to the first server of its language offering the method (as an
agent's would); code actions and document symbols go to every server that offers them and
their answers are merged. The editor's params and the server's result pass as raw JSON when
the server's position encoding is the editor's and the URI is the server's spelling of it;
otherwise they are converted (`convert.Converter`). A follow-up (`completionItem/resolve`,
`codeAction/resolve`, the hierarchies' calls, `inlayHint/resolve`) goes to the server that
gave the item: the first server to answer a kind of request on the connection is that
kind's own, its items passed as they came; any other server's items carry it in their
`data` (`tagging`); a follow-up whose item names no server goes to the kind's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from msgspec import Raw, Struct

from codeward.daemon.editor import tagging
from codeward.daemon.editor.convert import Converter, tokens
from codeward.daemon.editor.offers import PROVIDERS
from codeward.daemon.editor.workspace import Root, Workspace
from codeward.daemon.lsp.positions import Encoding, LineIndex
from codeward.daemon.lsp.shapes import unstructure
from codeward.protocol.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from codeward.daemon.lsp.service import Answer, DocumentContext, Relay, Versions

MERGED = frozenset({"textDocument/codeAction", "textDocument/documentSymbol"})
# whole semantic tokens, converted apart (a delta is offered only where none is needed)
TOKENS = frozenset({"textDocument/semanticTokens/full", "textDocument/semanticTokens/range"})
# follow-up -> the request whose answer it follows
FOLLOWS = {
    "completionItem/resolve": "textDocument/completion",
    "codeAction/resolve": "textDocument/codeAction",
    "inlayHint/resolve": "textDocument/inlayHint",
    "callHierarchy/incomingCalls": "textDocument/prepareCallHierarchy",
    "callHierarchy/outgoingCalls": "textDocument/prepareCallHierarchy",
    "typeHierarchy/supertypes": "textDocument/prepareTypeHierarchy",
    "typeHierarchy/subtypes": "textDocument/prepareTypeHierarchy",
}
DOCUMENT = frozenset(m for m in PROVIDERS if m.startswith("textDocument/"))
WORKSPACE = frozenset({"workspace/symbol", "workspace/executeCommand"})
FORWARDED = DOCUMENT | WORKSPACE | frozenset(FOLLOWS)
# answers the editor gets when no server can be asked about its document (outside every
# root, or of no language): LSP's "nothing here"
NOTHING: Any = None
ApplyEdit = Callable[[dict[str, Any], str], Awaitable[bool]]


class _Document(Struct, forbid_unknown_fields=False):
    uri: str


class _DocumentParams(Struct, rename="camel", forbid_unknown_fields=False):
    text_document: _Document


class _Command(Struct, forbid_unknown_fields=False):
    command: str
    arguments: list[Any] | None = None


_document_params = msgspec.json.Decoder(_DocumentParams)
_command_params = msgspec.json.Decoder(_Command)


def uri_of(params: Raw) -> str:
    """The document a request is about (raises `msgspec.DecodeError` when none)."""
    return _document_params.decode(params).text_document.uri


class Forwarder:
    """Sends one editor's requests (see the module docstring)."""

    def __init__(
        self,
        workspace: Workspace,
        encoding: Encoding,
        lines: Callable[[str], LineIndex | None],
        apply_edit: ApplyEdit,
        rewrite: Callable[[int | str], str],
    ) -> None:
        self.workspace = workspace
        self.encoding: Encoding = encoding
        self.lines = lines  # the editor's text of a URI (its buffer, else the servers')
        self.apply_edit = apply_edit
        self.rewrite = rewrite  # an editor's workDoneToken, as its server gets it
        self.encodings: dict[str, Encoding] = {}  # each server's that answered
        self.commands: dict[str, tuple[Root, str]] = {}  # command -> its root and server
        self._numbers: dict[Path, int] = {}  # roots as items' tags name them (`tagging`)
        self._marks: dict[tuple[Path, str], tagging.Mark] = {}
        self._own: dict[str, tuple[Root, str]] = {}  # by request: its first server's

    async def request(self, method: str, params: Raw) -> Any:
        """The result for the editor (raw JSON or data); raises `ToolError`."""
        if method in FOLLOWS:
            return await self._follow(method, params)
        if method == "workspace/symbol":
            return await self._workspace_symbols(params)
        if method == "workspace/executeCommand":
            return await self._execute(params)
        uri = uri_of(params)
        located = self.workspace.locate(uri)
        if located is None:
            return NOTHING
        root, path = located
        session = await self.workspace.session(root)
        if session.lsp.language_or_none(path) is None:
            return NOTHING
        with session.asking(self.workspace.client_id) as asking:
            return await self._document(method, root, path, uri, self._params(uri, params, asking))

    async def _document(
        self, method: str, root: Root, path: Path, uri: str, build: Callable[..., Any]
    ) -> Any:
        service = root.session.lsp
        if method in MERGED:
            answers, errors = await service.request_all(path, method, build, result_type=Raw)
            if not answers and errors:
                raise errors[0]
            self.encodings.update((a.server, a.encoding) for a in answers)
            return self._merged(method, root, answers, uri)
        answer = await service.request_held(path, method, build, result_type=Raw)
        self.encodings[answer.server] = answer.encoding
        if method in TOKENS and answer.encoding != self.encoding:
            return self._tokens_result(answer.result, answer.encoding, uri)
        if method in tagging.TAGGED:
            return self._tagged(method, answer.result, answer.encoding, uri, root, answer.server)
        return self._result(answer.result, answer.encoding, uri)

    def relayed(self, method: str, root: Root, relay: Relay, result: Raw) -> Any:
        """A relayed answer (`relay.Relays`), its server noted for the follow-ups: as
        `_document` answers it (its items tagged when `tagging` says)."""
        self.encodings[relay.server] = relay.encoding
        if method in tagging.TAGGED:
            return self._tagged(method, result, relay.encoding, None, root, relay.server)
        return result

    def _tokens_result(self, result: Raw, encoding: Encoding, uri: str) -> Any:
        data = msgspec.json.decode(result)
        index = self.lines(uri)
        if isinstance(data, dict) and isinstance(data.get("data"), list) and index is not None:
            data["data"] = tokens(data["data"], index, encoding, self.encoding)
        return data

    # -- params and results -------------------------------------------------------------

    def _tokens(self, data: Any) -> Any:
        """The editor's params with its progress tokens made the daemon's: no partial
        results (the answer comes whole), work-done progress told back to this editor."""
        if isinstance(data, dict):
            data.pop("partialResultToken", None)
            token = data.get("workDoneToken")
            if isinstance(token, int | str):
                data["workDoneToken"] = self.rewrite(token)
        return data

    def _params(
        self, uri: str, params: Raw, asking: Callable[[str], None]
    ) -> Callable[[DocumentContext], Any]:
        tokens = b'Token"' in bytes(params)  # (a progress token: rare; read only then)

        def build(ctx: DocumentContext) -> Any:
            asking(ctx.server)  # its messages meanwhile are this editor's
            if ctx.encoding == self.encoding and ctx.uri == uri and not tokens:
                return params  # as the editor sent it
            data = self._tokens(msgspec.json.decode(params))
            if ctx.encoding != self.encoding:
                data = Converter(self.encoding, ctx.encoding, self.lines)(data, uri)
            if isinstance(data.get("textDocument"), dict):
                data["textDocument"] = {**data["textDocument"], "uri": ctx.uri}
            return data

        return build

    def _result(self, result: Raw, encoding: Encoding, uri: str | None) -> Any:
        if encoding == self.encoding:
            return result
        return Converter(encoding, self.encoding, self.lines)(msgspec.json.decode(result), uri)

    def _data(self, result: Raw, encoding: Encoding, uri: str | None) -> Any:
        """A result as data, in the editor's encoding."""
        data = msgspec.json.decode(result)
        if encoding == self.encoding:
            return data
        return Converter(encoding, self.encoding, self.lines)(data, uri)

    def _merged(self, method: str, root: Root, answers: list[Answer], uri: str) -> Any:
        if len(answers) == 1 and method != "textDocument/codeAction":
            return self._result(answers[0].result, answers[0].encoding, uri)
        items: list[Any] = []
        shape: bool | None = None  # document symbols: flat (`location`) or a tree
        for answer in answers:
            found = self._data(answer.result, answer.encoding, uri)
            if not isinstance(found, list):
                continue
            if method == "textDocument/codeAction":
                mark = self._mark(method, root, answer.server)
                items += found if mark is None else tagging.tag(method, found, mark)
                continue
            for item in found:
                flat = isinstance(item, dict) and "location" in item
                if shape is None:
                    shape = flat
                if flat == shape:  # (LSP cannot mix the two shapes in one answer)
                    items.append(item)
        return items

    # -- follow-ups and workspace requests ----------------------------------------------

    def _mark(self, method: str, root: Root, server: str) -> tagging.Mark | None:
        """The tag of the items `server` of `root` gives in answer to `method`; None for
        the first server to answer that kind of request (its items pass untagged)."""
        own = self._own.setdefault(FOLLOWS.get(method, method), (root, server))
        if own[1] == server and own[0].path == root.path:
            return None
        mark = self._marks.get((root.path, server))
        if mark is None:
            number = self._numbers.setdefault(root.path, len(self._numbers))
            mark = self._marks[root.path, server] = tagging.Mark(server, number)
        return mark

    def _tagged(
        self, method: str, result: Raw, encoding: Encoding, uri: str | None, root: Root, server: str
    ) -> Any:
        """A result whose items name their server (`tagging`), in the editor's encoding."""
        mark = self._mark(method, root, server)
        if mark is None:
            return self._result(result, encoding, uri)
        if encoding == self.encoding:
            return tagging.tag_raw(method, result, mark)
        return tagging.tag(method, self._data(result, encoding, uri), mark)

    def _source(self, method: str, data: Any) -> tuple[Root, str, Encoding]:
        """The root and server a follow-up goes to (its item's tag, else its kind's own
        server), and that server's encoding; the item's `data` put back."""
        tagged = tagging.untag(method, data)
        own = self._own.get(FOLLOWS[method])
        if tagged is not None:
            server, number = tagged
            root = next((r for r in self.workspace.roots if self._numbers.get(r.path) == number),
                        None)  # fmt: skip
            if root is None:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"The item of this {method} came from a folder no longer in the "
                    f"workspace; send {FOLLOWS[method]} again.",
                )
        elif own is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{method} follows {FOLLOWS[method]}, which no server answered on this "
                "connection yet; send that request first.",
            )
        else:
            root, server = own
        return root, server, self.encodings.get(server, self.encoding)

    async def _follow(self, method: str, params: Raw) -> Any:
        data = self._tokens(msgspec.json.decode(params))
        root, server, encoding = self._source(method, data)
        uri = _uri_in(data)
        if encoding != self.encoding:
            data = Converter(self.encoding, encoding, self.lines)(data, uri)
        session = await self.workspace.session(root)
        with session.asking(self.workspace.client_id) as asking:
            asking(server)
            answer = await session.lsp.ask(server, method, data, result_type=Raw)
        return self._tagged(method, answer.result, encoding, uri, root, server)

    async def _workspace_symbols(self, params: Raw) -> Any:
        data = self._tokens(msgspec.json.decode(params))
        symbols: list[Any] = []
        for root in self.workspace.roots:
            service = (await self.workspace.session(root)).lsp
            files, _ = await trio.to_thread.run_sync(service.project_files)
            languages = service.workspace_languages(files)
            for answer in await service.workspace_request(
                "workspace/symbol", data, languages=languages, result_type=Raw
            ):
                found = self._data(answer.result, answer.encoding, None)
                symbols.extend(found if isinstance(found, list) else [])
        return symbols

    async def _execute(self, params: Raw) -> Any:
        command = _command_params.decode(params)
        target = self.commands.get(command.command)
        if target is None:
            raise ToolError(
                ErrorKind.UNSUPPORTED_BY_SERVER,
                f"No server of this project offers the command {command.command!r}; run "
                "one of executeCommandProvider.commands.",
            )
        root, server = target
        service = (await self.workspace.session(root)).lsp

        async def on_edit(edit: Any, encoding: Encoding, versions: Versions) -> None:
            data = unstructure(edit)
            if encoding != self.encoding:
                data = Converter(encoding, self.encoding, self.lines)(data, None)
            if not await self.apply_edit(data, command.command):
                raise ToolError(ErrorKind.WRITE_FAILED, "The editor did not apply the edit.")

        call = {"command": command.command, "arguments": command.arguments or []}
        with root.session.asking(self.workspace.client_id) as asking:
            asking(server)
            await service.execute_command(server, call, on_edit)
        return None  # (the service keeps what the command did: its edits went to the editor)


def _uri_in(data: Any) -> str | None:
    """The document a follow-up's item is about (`uri`, `textDocument.uri`)."""
    if isinstance(data, dict):
        item = data.get("item")
        if isinstance(item, dict) and isinstance(item.get("uri"), str):
            return item["uri"]
        if isinstance(data.get("uri"), str):
            return data["uri"]
    return None
