"""Code actions: the diagnostics their requests carry, and the actions servers offer, indexed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from codeward.daemon.lsp.positions import Encoding
from codeward.daemon.lsp.service import Answer
from codeward.daemon.lsp.types import SEVERITY_NAMES, Diagnostic


def in_lines(diagnostics: list[Diagnostic], first: int, last: int) -> list[dict[str, Any]]:
    """The diagnostics touching 0-based lines `first`..`last`, as LSP JSON."""
    return [
        {k: v for k, v in msgspec.to_builtins(d).items() if v is not None}
        for d in diagnostics
        if d.range.start.line <= last and d.range.end.line >= first
    ]


@dataclass
class Action:
    index: int
    server: str
    title: str
    kind: str | None
    preferred: bool
    disabled: str | None
    diagnostics: list[dict[str, Any]]
    raw: dict[str, Any]  # the CodeAction or Command as the server sent it
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


def collect(answers: list[Answer], uri: str, kinds: list[str] | None) -> list[Action]:
    """The actions of every answer, in the servers' routing order, indexed from 0."""
    found: list[Action] = []
    for answer in answers:
        for item in answer.result if isinstance(answer.result, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("title"), str):
                continue
            bare_command = isinstance(item.get("command"), str)
            kind = None if bare_command else item.get("kind")
            kind = kind if isinstance(kind, str) else None
            if not matches(kind, kinds):
                continue
            disabled = item.get("disabled")
            found.append(
                Action(
                    index=len(found),
                    server=answer.server,
                    title=item["title"],
                    kind=kind,
                    preferred=bool(item.get("isPreferred")),
                    disabled=str(disabled.get("reason", "disabled"))
                    if isinstance(disabled, dict)
                    else None,
                    diagnostics=_shown(answer, uri, item.get("diagnostics")),
                    raw=item,
                    encoding=answer.encoding,
                )
            )
    return found


def _shown(answer: Answer, uri: str, diagnostics: Any) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    for d in diagnostics if isinstance(diagnostics, list) else []:
        if not isinstance(d, dict) or not isinstance(d.get("range"), dict):
            continue
        try:
            line, column, end_line, end_column = answer.span(uri, d["range"])
        except (KeyError, TypeError):
            continue
        shown.append(
            {
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "severity": SEVERITY_NAMES.get(d.get("severity") or 1, "error"),
                "message": str(d.get("message", "")),
                "code": d.get("code"),
                "source": d.get("source"),
            }
        )
    return shown
