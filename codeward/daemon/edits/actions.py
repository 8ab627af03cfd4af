"""Code actions: the diagnostics their requests carry, and the actions servers offer, indexed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.types import SEVERITY_NAMES
from codeward.protocol.errors import ToolError


def in_lines(diagnostics: Sequence[lsp.Diagnostic], first: int, last: int) -> list[lsp.Diagnostic]:
    """The diagnostics touching 0-based lines `first`..`last`."""
    return [d for d in diagnostics if d.range.start.line <= last and d.range.end.line >= first]


@dataclass
class Action:
    index: int
    server: str
    title: str
    kind: str | None
    preferred: bool
    disabled: str | None
    diagnostics: list[dict[str, Any]]
    item: lsp.CodeAction | lsp.Command
    raw: Any  # the CodeAction as the server sent it, sent back as is to resolve it
    encoding: Encoding = "utf-16"  # the server's position encoding

    def public(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "index": self.index,
            "title": self.title,
            "kind": self.kind,
            "preferred": self.preferred,
            "diagnostics": self.diagnostics,
            "server": self.server,
        }
        if self.disabled is not None:
            shown["disabled"] = self.disabled
        return shown


def matches(kind: str | None, kinds: list[str] | None) -> bool:
    """Whether `kind` is one of `kinds` or a sub-kind of one (`source.fixAll.ruff`)."""
    if not kinds:
        return True
    return kind is not None and any(kind == k or kind.startswith(k + ".") for k in kinds)


def collect(
    answers: list[Answer], uri: str, kinds: list[str] | None
) -> tuple[list[Action], list[ToolError]]:
    """The actions of every answer, in the servers' routing order, indexed from 0; an
    answer off the LSP spec is left out, its `lsp_error` returned beside the others'."""
    found: list[Action] = []
    errors: list[ToolError] = []
    for answer in answers:
        try:
            items = shapes.answer(answer.result, answer.server, "textDocument/codeAction")
        except ToolError as exc:
            errors.append(exc)
            continue
        for item, raw in zip(items or [], answer.result or [], strict=True):
            if isinstance(item, lsp.Command):
                kind, preferred, disabled, diagnostics = None, False, None, None
            else:
                kind, preferred = item.kind, bool(item.is_preferred)
                disabled = item.disabled.reason if item.disabled is not None else None
                diagnostics = item.diagnostics
            if not matches(kind, kinds):
                continue
            found.append(
                Action(
                    index=len(found),
                    server=answer.server,
                    title=item.title,
                    kind=kind,
                    preferred=preferred,
                    disabled=disabled,
                    diagnostics=_shown(answer, uri, diagnostics or []),
                    item=item,
                    raw=raw,
                    encoding=answer.encoding,
                )
            )
    return found, errors


def _shown(answer: Answer, uri: str, diagnostics: Sequence[lsp.Diagnostic]) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    for d in diagnostics:
        line, column, end_line, end_column = answer.span(uri, d.range)
        shown.append(
            {
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "severity": SEVERITY_NAMES.get(d.severity or 1, "error"),
                "message": d.message,
                "code": d.code,
                "source": d.source,
            }
        )
    return shown
