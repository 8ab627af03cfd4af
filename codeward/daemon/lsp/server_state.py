"""Where a language server is in its life (`supervisor.Supervisor.state`)."""

from __future__ import annotations

from enum import StrEnum


class ServerState(StrEnum):
    IDLE = "idle"  # not started yet: servers start on first need
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"  # crashed; waiting out the backoff
    FAILED = "failed"  # too many crashes; waits for a request after the cool-down
    UNAVAILABLE = "unavailable"  # its program is not installed
    STOPPED = "stopped"
    # Not a state of the actor: how `status()` shows a running server that does not answer
    # (stopped by a signal, or a request past its timeout still unanswered).
    UNRESPONSIVE = "unresponsive"
