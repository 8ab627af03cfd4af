"""A server's question for the people (`window/showMessageRequest`), offered to the editors of
the roots it serves: the one that takes it asks its person, and the server gets the action
item chosen (null when the editor fails, takes too long or goes).

The offers go in two stages, each through every root's sink (the sessions pick the editors):
1. `asked`: the editors whose request was in flight on the server when it asked (the
   question is about their work: asked whatever they declared, as every LSP client answers
   this request);
2. `declared`, only when no editor's request was in flight on it in any root (the server's
   own work, or an agent's request): the first editor of a root that declared
   `window.showMessage`.
No editor took it: the server is answered with no action, and the question is shown as a
`window/showMessage` (as before there were editors to ask; agents are never asked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

Stage = Literal["asked", "declared"]
Choose = Callable[[dict[str, Any]], Awaitable[Any]]  # the question's params -> the item chosen


class Question:
    """One `window/showMessageRequest` (`params`: type, message, actions) being offered."""

    __slots__ = ("_choose", "in_flight", "params", "stage")

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.stage: Stage = "asked"
        self.in_flight = False  # an editor's request was in flight on the server
        self._choose: Choose | None = None

    @property
    def taken(self) -> bool:
        return self._choose is not None

    def take(self, choose: Choose) -> None:
        """An editor asks its person (the first to take it; the others are not asked)."""
        if self._choose is None:
            self._choose = choose

    async def answer(self) -> Any:
        """The action item the person chose, or None."""
        return None if self._choose is None else await self._choose(self.params)


def offered(params: dict[str, Any], offer: Callable[[Question], None]) -> Question:
    """`params` offered by stages (see the module docstring) until an editor takes it."""
    question = Question(params)
    offer(question)
    if not question.taken and not question.in_flight:
        question.stage = "declared"
        offer(question)
    return question
