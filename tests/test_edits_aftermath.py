"""An edit's delta compares only what a server said on both sides (sans IO): a server that
did not answer for a file before (or after) the edit is not blamed for, nor credited with,
that file's diagnostics, and the edited file's report says it cannot vouch for it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codeward.daemon.edits.aftermath import Aftermath
from codeward.daemon.edits.history import DiagnosticsHistory, Snapshot
from codeward.daemon.lsp.service import FileDiagnostics, Found
from codeward.daemon.tools.diagnostics import since

ROOT = Path("/project")
EDITED, OTHER = ROOT / "edited.py", ROOT / "other.py"


def errors(file: str, server: str, lines: range) -> list[Found]:
    return [Found(file, n, 1, n, 5, 1, f"error {n}", "E", server, server=server) for n in lines]


def answer(text: str, found: list[Found], silent: Sequence[str] = ()) -> FileDiagnostics:
    return FileDiagnostics(found, f"hash-{len(text)}", bool(silent), [], text, list(silent))


def check() -> Aftermath:
    return Aftermath(DiagnosticsHistory(), ROOT, lambda _: "python", [EDITED], [OTHER])


def test_another_files_late_answer_is_not_blamed_on_the_edit() -> None:
    """The 21 errors of an open document the type checker had not answered for before."""
    text = "x = 1\n" * 30
    aftermath = check()
    aftermath.took(
        {
            EDITED: answer("a\n", []),
            OTHER: answer(text, errors("other.py", "ruff", range(1, 3)), ["basedpyright"]),
        }
    )
    late = errors("other.py", "ruff", range(1, 3))
    late += errors("other.py", "basedpyright", range(1, 22))
    report = aftermath.report(
        [EDITED], (), {EDITED: answer("a\n# c\n", []), OTHER: answer(text, late)}
    )
    assert report.introduced() == []
    by_file = {f.file: f for f in report.files}
    assert by_file["other.py"].partial == ["basedpyright"]
    assert by_file["edited.py"].partial == [] and report.unanswered() == []


def test_the_edited_files_silent_server_is_unanswered() -> None:
    aftermath = check()
    aftermath.took({EDITED: answer("a\n", errors("edited.py", "basedpyright", range(1, 2)))})
    after = answer("a\nb\n", errors("edited.py", "ruff", range(2, 3)), ["basedpyright"])
    report = aftermath.report([EDITED], (), {EDITED: after})
    (edited,) = report.files
    # ruff answered on both sides: its new error is introduced; basedpyright's is unknown
    assert [d.server for d in report.introduced()] == ["ruff"]
    assert edited.resolved == [] and report.unanswered() == ["basedpyright"]


def test_both_sides_answered_is_a_plain_delta() -> None:
    aftermath = check()
    aftermath.took({EDITED: answer("a\n", errors("edited.py", "basedpyright", range(1, 2)))})
    after = answer("a\nb\n", errors("edited.py", "basedpyright", range(2, 3)))
    report = aftermath.report([EDITED], (), {EDITED: after})
    (edited,) = report.files
    assert [d.line for d in edited.introduced] == [2] and [d.line for d in edited.resolved] == [1]
    assert report.unanswered() == []


def test_since_compares_only_the_servers_that_answered_both_times() -> None:
    """`get_diagnostics since`: a server silent for the earlier content is not blamed."""
    old = Snapshot("h1", "a\n", tuple(errors("edited.py", "ruff", range(1, 2))), ("basedpyright",))
    now = answer("a\n", errors("edited.py", "ruff", range(1, 2)))
    now.diagnostics += errors("edited.py", "basedpyright", range(1, 5))
    shown = since(old, now, None)
    assert shown["introduced"] == [] and shown["resolved"]["count"] == 0
    assert shown["partial_servers"] == ["basedpyright"]
