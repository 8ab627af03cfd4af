"""Which code actions a `get_code_actions` call asks for and applies: the request at a
diagnostic's own range, the action chosen by index or title, and an action's edit as
replacements to combine with others'."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from codeward.daemon.edits.actions import Action
from codeward.daemon.edits.batch import Replacement
from codeward.daemon.edits.workspace import EditText, operations
from codeward.daemon.lsp import shapes
from codeward.daemon.lsp.service import Answer, DocumentContext
from codeward.protocol.errors import ErrorKind, ToolError

PREFERRED = "preferred"
FIX_ALL = "source.fixAll"
CODE_ACTION = "textDocument/codeAction"
MAX_AT_DIAGNOSTICS = 20  # requests more at diagnostics' own ranges, at most


def at_diagnostic(diagnostic: lsp.Diagnostic, kinds: list[str] | None, doc: DocumentContext) -> Any:
    """A code action request at `diagnostic`'s own range, with it alone as context."""
    context = lsp.CodeActionContext(
        diagnostics=[diagnostic],
        only=kinds or None,
        trigger_kind=lsp.CodeActionTriggerKind.Invoked,
    )
    return shapes.document_params(CODE_ACTION, doc.uri, range=diagnostic.range, context=context)


def replacements(answer: Answer, edit: Any) -> list[Replacement]:
    """An action's WorkspaceEdit as code-point replacements (text edits only)."""
    found: list[Replacement] = []
    for op in operations(edit):
        if not isinstance(op, EditText):
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "it creates, renames or deletes files")
        for e in op.edits:
            line, character, end_line, end_character = answer.span(op.uri, e.range)
            found.append(
                Replacement(
                    op.uri, (line - 1, character - 1), (end_line - 1, end_character - 1), e.new_text
                )
            )
    return found


def choose(actions: list[Action], choice: int | str) -> Action:
    if isinstance(choice, int):
        if 0 <= choice < len(actions):
            action = actions[choice]
        else:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"There is no code action {choice} here; "
                + (
                    f"give an index from 0 to {len(actions) - 1}."
                    if actions
                    else "no action is offered for these lines."
                ),
            )
    else:
        chosen = [a for a in actions if a.title == choice]
        if not chosen:
            titles = "; ".join(repr(a.title) for a in actions[:10]) or "none"
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"No code action here is titled {choice!r}; give an index or one of the "
                f"titles offered ({titles}).",
            )
        action = chosen[0]
    if action.disabled is not None:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"The code action {action.title!r} is disabled ({action.disabled}); choose another.",
        )
    return action
