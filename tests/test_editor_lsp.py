"""`codeward lsp` end to end: the real pump, a real daemon, real basedpyright and ruff on a
small Python project, driven by a small LSP client written here (tests/lsp_client.py).

One daemon and one project serve the module (the servers start once); each test starts its
own `codeward lsp` (an editor) on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.leaks import leftovers
from tests.lsp_client import LspProcess, frame
from tests.test_cli_e2e import CODEWARD, Env, running_daemon
from tests.test_intel_go_c import GO_FILES

pytestmark = pytest.mark.servers("basedpyright", "ruff")

MODELS = '''\
"""Models."""


class Account:
    """A bank account."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.balance = 0

    def deposit(self, amount: int) -> int:
        """Add money."""
        self.balance += amount
        return self.balance


def open_account(owner: str) -> Account:
    return Account(owner)
'''
MAIN = '''\
"""Main."""
import os

from models import Account, open_account

account = open_account("ann")
total: int = account.deposit(5)
other = Account("bob")
'''


UNI = '''\
"""Text beyond ASCII."""
greeting = "héllo😀"; shout = greeting.upper()
'''


class Project:
    def __init__(self, env: Env, root: Path, daemon: subprocess.Popen[bytes]) -> None:
        self.env = env
        self.daemon = daemon
        self.root = root
        self.models = root / "models.py"
        self.main = root / "main.py"

    def editor(self) -> LspProcess:
        return LspProcess([CODEWARD, "--socket", str(self.env.socket), "lsp"], env=self.env.vars)

    def status(self) -> Any:
        return self.env.json("status")


@pytest.fixture(scope="module")
def project() -> Iterator[Project]:
    base = Path(tempfile.mkdtemp(prefix="cwl-", dir="/tmp"))  # AF_UNIX paths are short
    try:
        env = Env(base)
        root = base / "proj"
        root.mkdir()
        (root / "models.py").write_text(MODELS)
        (root / "main.py").write_text(MAIN)
        (root / "uni.py").write_text(UNI)
        (root / "other").mkdir()
        (root / "other" / "tool.py").write_text("def helper() -> int:\n    return 1\n")
        (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        go = base / "gomod"
        for name, text in GO_FILES.items():
            (go / name).parent.mkdir(parents=True, exist_ok=True)
            (go / name).write_text(text)
        with running_daemon(env) as daemon:
            assert env.run("trust", str(root)).returncode == 0
            assert env.run("trust", str(go)).returncode == 0
            yield Project(env, root, daemon)
    finally:
        if os.environ.get("CW_SHOW_LOG"):
            print(Path(base / "state" / "codeward" / "daemon.log").read_text()[-6000:])
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_leaked_processes(project: Project) -> Iterator[None]:
    """conftest's check, but for the module's daemon (and the servers it owns)."""
    yield
    leaked = leftovers(keep={project.daemon.pid})
    assert not leaked, f"processes left behind: {leaked}"


@pytest.fixture
def editor(project: Project) -> Iterator[LspProcess]:
    proc = project.editor()
    try:
        yield proc
    finally:
        proc.close()


def descendants(pid: int, name: str) -> list[int]:
    """The processes under `pid` whose command line names `name`."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes().decode(errors="replace")
                commands[int(entry.name)] = command
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])

    def under(child: int) -> bool:
        while child > 1:
            child = parents.get(child, 0)
            if child == pid:
                return True
        return False

    return [p for p, command in commands.items() if name in command and under(p)]


def at(uri: str, line: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def test_initialize_answers_the_servers_capabilities_and_exits_cleanly(
    project: Project, editor: LspProcess
) -> None:
    result = editor.initialize(project.root, general={"positionEncodings": ["utf-16"]})
    capabilities = result["capabilities"]
    assert result["serverInfo"]["name"] == "codeward"
    assert capabilities["positionEncoding"] == "utf-16"
    assert capabilities["hoverProvider"] and capabilities["definitionProvider"]
    assert capabilities["completionProvider"]["triggerCharacters"]
    assert capabilities["codeActionProvider"]
    assert capabilities["textDocumentSync"]["change"] == 2
    assert capabilities["diagnosticProvider"]
    assert editor.shutdown() == 0


def test_hover_definition_references_completion_and_symbols(
    project: Project, editor: LspProcess
) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    models = project.models.as_uri()
    hover = editor.result("textDocument/hover", at(main, 6, 22))  # deposit
    assert "Add money" in json.dumps(hover)
    found = editor.result("textDocument/definition", at(main, 5, 12))  # open_account
    targets = found if isinstance(found, list) else [found]
    assert {t.get("uri", t.get("targetUri")) for t in targets} == {models}
    start = (targets[0].get("range") or targets[0]["targetSelectionRange"])["start"]
    assert start["line"] == 16
    context = {"context": {"includeDeclaration": True}}
    refs = editor.result("textDocument/references", {**at(main, 7, 10), **context})
    assert {r["uri"] for r in refs} == {main, models}
    completion = editor.result("textDocument/completion", at(main, 6, 21))  # account.|
    items = completion["items"] if isinstance(completion, dict) else completion
    assert "deposit" in {i["label"] for i in items}
    item = next(i for i in items if i["label"] == "deposit")
    resolved = editor.result("completionItem/resolve", item)
    assert resolved["label"] == "deposit"
    symbols = editor.result("textDocument/documentSymbol", {"textDocument": {"uri": main}})
    assert {"account", "total", "other"} <= {s["name"] for s in symbols}
    assert editor.shutdown() == 0


def test_diagnostics_are_pushed_and_pulled_and_follow_the_buffer(
    project: Project, editor: LspProcess
) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    # ruff's F401: `os` imported and unused
    pushed = editor.diagnostics(main, lambda d: any(x.get("code") == "F401" for x in d))
    unused = next(d for d in pushed["diagnostics"] if d.get("code") == "F401")
    assert unused["range"]["start"] == {"line": 1, "character": 7}
    assert pushed.get("version") == 1
    pulled = editor.result("textDocument/diagnostic", {"textDocument": {"uri": main}})
    assert pulled["kind"] == "full"
    assert any(d.get("code") == "F401" for d in pulled["items"])
    # each server's own diagnostic, its data included: the quick fix follows from it
    assert unused["source"] == "Ruff" and "data" in unused
    line = unused["range"]
    actions = editor.result("textDocument/codeAction", {"textDocument": {"uri": main},
                            "range": line, "context": {"diagnostics": [unused]}})  # fmt: skip
    fixes = [a for a in actions if a.get("kind") == "quickfix"]
    assert fixes and "os" in json.dumps(fixes)
    # the servers' configuration is codeward's: never asked of the editor
    assert "workspace/configuration" not in editor.asked
    assert editor.shutdown() == 0


def test_formatting_rename_and_code_actions(project: Project, editor: LspProcess) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    rename = editor.result("textDocument/rename", {**at(main, 5, 0), "newName": "acct"})
    changes = rename.get("changes") or {
        c["textDocument"]["uri"]: c["edits"] for c in rename["documentChanges"]
    }
    assert [e["range"]["start"]["line"] for e in changes[main]] == [5, 6]  # defined, used
    options = {"tabSize": 4, "insertSpaces": True}
    formatted = editor.result("textDocument/formatting", {"textDocument": {"uri": main},
                                                          "options": options})  # fmt: skip
    assert formatted is None or isinstance(formatted, list)
    actions = editor.result("textDocument/codeAction", {
        "textDocument": {"uri": main},
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}},
        "context": {"diagnostics": []},
    })  # fmt: skip
    titles = [a["title"] for a in actions]
    assert any("organize" in t.lower() or "import" in t.lower() for t in titles), titles
    assert editor.shutdown() == 0


def test_bad_input_is_answered_and_the_editor_goes_on(project: Project, editor: LspProcess) -> None:
    early = editor.request("textDocument/hover", at(project.main.as_uri(), 0, 0))
    assert early["error"]["code"] == -32002
    editor.initialize(project.root)
    editor.write(frame(b"{not json"))
    assert editor.reply(None)["error"]["code"] == -32700
    unknown = editor.request("textDocument/colorPresentation", {})
    assert unknown["error"]["code"] == -32601 and "colorPresentation" in unknown["error"]["message"]
    for uri in ("file:///etc/hostname", "file:///a%00b", "file://[/x", "untitled:1"):
        editor.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}})  # fmt: skip
        outside = editor.request("textDocument/hover", at(uri, 0, 0))
        assert outside == {"jsonrpc": "2.0", "id": outside["id"], "result": None}
    bad = editor.request("textDocument/hover", {"position": {}})
    assert bad["error"]["code"] == -32602
    # a change of a document never opened, and one out of its lines: said, not applied
    editor.notify("textDocument/didChange", {"textDocument": {"uri": "file:///x.py", "version": 2},
                                             "contentChanges": [{"text": "x"}]})  # fmt: skip
    said = editor.wait_for(lambda m: m.get("method") == "window/logMessage")
    assert "didOpen first" in said["params"]["message"]
    assert editor.result("textDocument/hover", at(project.main.as_uri(), 5, 12))
    assert editor.shutdown() == 0


def test_exit_without_shutdown_ends_with_one(project: Project, editor: LspProcess) -> None:
    editor.initialize(project.root)
    editor.notify("exit")
    assert editor.close() == 1


def test_two_editors_share_one_process_per_server(project: Project) -> None:
    first, second = project.editor(), project.editor()
    try:
        for editor in (first, second):
            editor.initialize(project.root)
            main = editor.open(project.main)
            assert editor.result("textDocument/hover", at(main, 6, 22))
        sessions = project.env.json("sessions")["sessions"]
        mine = [s for s in sessions if Path(s["root"]) == project.root.resolve()]
        assert len(mine) == 1 and mine[0]["clients"] >= 2
        running = [s["name"] for s in mine[0]["servers"] if s.get("pid")]
        assert "basedpyright" in running and sorted(running) == sorted(set(running))
        # and on the machine: one basedpyright under the daemon
        assert len(descendants(project.daemon.pid, "basedpyright/langserver")) == 1
        assert first.shutdown() == 0 and second.shutdown() == 0
    finally:
        first.close()
        second.close()


def test_cancel_reaches_the_request(project: Project, editor: LspProcess) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    msg_id = editor.start("workspace/symbol", {"query": ""})
    editor.notify("$/cancelRequest", {"id": msg_id})
    reply = editor.reply(msg_id)
    # cancelled, or answered before the cancellation arrived
    assert reply.get("error", {}).get("code") == -32800 or "result" in reply
    assert editor.result("textDocument/hover", at(main, 6, 22))
    assert editor.shutdown() == 0


def test_the_spawned_pump_answers_initialize_quickly(project: Project) -> None:
    warm = project.editor()
    warm.initialize(project.root)
    times = []
    for _ in range(3):
        editor = project.editor()
        started = time.monotonic()
        editor.initialize(project.root)
        times.append(time.monotonic() - started)
        editor.shutdown()
    warm.shutdown()
    assert min(times) < 2.0, times  # (the figure itself: bench; here only a bound under load)
    assert os.environ  # (the env the pumps ran with)


def test_an_unsaved_change_is_what_the_servers_see_until_the_editor_leaves(
    project: Project, editor: LspProcess
) -> None:
    editor.initialize(project.root)
    main = editor.open(project.main)
    editor.diagnostics(main)  # the opened text's
    end = {"line": 8, "character": 0}
    editor.notify("textDocument/didChange", {
        "textDocument": {"uri": main, "version": 2},
        "contentChanges": [{"range": {"start": end, "end": end},
                            "text": "broken = undefined_thing\n"}],
    })  # fmt: skip
    pushed = editor.diagnostics(main, lambda d: any("undefined_thing" in x["message"] for x in d))
    assert pushed["version"] == 2
    mention = next(d for d in pushed["diagnostics"] if "undefined_thing" in d["message"])
    assert mention["range"]["start"] == {"line": 8, "character": 9}
    hover = editor.result("textDocument/hover", at(main, 8, 1))
    assert "broken" in json.dumps(hover)
    # an agent asks the same servers: it sees the buffer while the editor holds it
    agent = project.env.json("--root", str(project.root), "diagnostics", "main.py")
    assert "undefined_thing" in json.dumps(agent)
    assert editor.shutdown() == 0
    # the editor left: the servers see the disk again
    agent = project.env.json("--root", str(project.root), "diagnostics", "main.py")
    assert "undefined_thing" not in json.dumps(agent)
    assert project.main.read_text() == MAIN


def offered_or_refused(
    editor: LspProcess, capabilities: dict[str, Any], key: str, method: str, params: Any
) -> Any:
    """A method's answer where the servers offer it; else the error that says none does."""
    reply = editor.request(method, params)
    if capabilities.get(key):
        assert "error" not in reply, reply
        return reply["result"]
    assert reply["error"]["code"] == -32601 and method in reply["error"]["message"], reply
    return None


def test_the_other_methods_reach_their_servers(project: Project, editor: LspProcess) -> None:
    capabilities = editor.initialize(project.root)["capabilities"]
    main, models = editor.open(project.main), editor.open(project.models)
    help_ = editor.result("textDocument/signatureHelp", at(main, 5, 23))  # open_account("|
    assert "owner" in json.dumps(help_)
    highlights = editor.result("textDocument/documentHighlight", at(main, 5, 1))
    assert len(highlights) == 2
    folds = offered_or_refused(
        editor,
        capabilities,
        "foldingRangeProvider",
        "textDocument/foldingRange",
        {"textDocument": {"uri": models}},
    )
    assert folds is None or folds
    ranges = offered_or_refused(editor, capabilities, "selectionRangeProvider",
                                "textDocument/selectionRange", {"textDocument": {"uri": main},
                                "positions": [{"line": 6, "character": 22}]})  # fmt: skip
    assert ranges is None or ranges[0]["range"]
    tokens = offered_or_refused(
        editor,
        capabilities,
        "semanticTokensProvider",
        "textDocument/semanticTokens/full",
        {"textDocument": {"uri": main}},
    )
    assert tokens is None or tokens["data"]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 8, "character": 0}}
    hints = offered_or_refused(editor, capabilities, "inlayHintProvider", "textDocument/inlayHint",
                               {"textDocument": {"uri": main}, "range": whole})  # fmt: skip
    assert hints is None or isinstance(hints, list)
    for method, key in (("textDocument/declaration", "declarationProvider"),
                        ("textDocument/typeDefinition", "typeDefinitionProvider"),
                        ("textDocument/implementation", "implementationProvider")):  # fmt: skip
        offered_or_refused(editor, capabilities, key, method, at(main, 7, 9))
    prepared = editor.result("textDocument/prepareRename", at(main, 5, 1))
    assert prepared is not None
    items = editor.result("textDocument/prepareCallHierarchy", at(models, 16, 6))
    assert items[0]["name"] == "open_account"
    calls = editor.result("callHierarchy/incomingCalls", {"item": items[0]})
    assert {c["from"]["uri"] for c in calls} == {main}
    types = offered_or_refused(editor, capabilities, "typeHierarchyProvider",
                               "textDocument/prepareTypeHierarchy", at(models, 3, 7))  # fmt: skip
    if types:
        assert isinstance(editor.result("typeHierarchy/supertypes", {"item": types[0]}), list)
    symbols = editor.result("workspace/symbol", {"query": "open_acc"})
    assert {s["name"] for s in symbols} >= {"open_account"}
    assert editor.shutdown() == 0


def test_code_actions_resolve_and_commands_edit_in_the_editor(
    project: Project, editor: LspProcess
) -> None:
    capabilities = editor.initialize(project.root)["capabilities"]
    main = editor.open(project.main)
    editor.diagnostics(main, lambda d: any(x.get("code") == "F401" for x in d))
    line = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}}
    actions = editor.result("textDocument/codeAction", {
        "textDocument": {"uri": main}, "range": line, "context": {"diagnostics": []}})  # fmt: skip
    lazy = [a for a in actions if "edit" not in a and "data" in a]
    if lazy:  # a server that fills its actions' edits on resolve
        resolved = editor.result("codeAction/resolve", lazy[0])
        assert resolved["edit"] and resolved["title"] == lazy[0]["title"]
    commands = capabilities["executeCommandProvider"]["commands"]
    assert "ruff.applyAutofix" in commands
    editor.result(
        "workspace/executeCommand",
        {"command": "ruff.applyAutofix", "arguments": [{"uri": main, "version": 1}]},
    )
    # ruff asked for the edit with workspace/applyEdit: it went to this editor
    assert editor.applied_edits, "the command's edit did not reach the editor"
    assert main in json.dumps(editor.applied_edits[0]["edit"])
    unknown = editor.request("workspace/executeCommand", {"command": "nobody.knows"})
    assert unknown["error"]["code"] == -32601 and unknown["error"]["data"]["kind"] == (
        "unsupported_by_server"
    )
    assert project.main.read_text() == MAIN  # the disk is the editor's business
    assert editor.shutdown() == 0


def test_positions_in_the_editors_encoding(project: Project, editor: LspProcess) -> None:
    result = editor.initialize(project.root, general={"positionEncodings": ["utf-8"]})
    assert result["capabilities"]["positionEncoding"] == "utf-8"
    uni = editor.open(project.root / "uni.py")
    line = (project.root / "uni.py").read_text().splitlines()[1]
    upper = len(line[: line.index("upper")].encode())  # UTF-8 units
    hover = editor.result("textDocument/hover", at(uni, 1, upper + 1))
    assert "upper" in json.dumps(hover)
    shout = len(line[: line.index("shout")].encode())
    refs = editor.result(
        "textDocument/references", {**at(uni, 1, shout), "context": {"includeDeclaration": True}}
    )
    assert [r["range"]["start"] for r in refs] == [{"line": 1, "character": shout}]
    assert refs[0]["range"]["end"]["character"] == shout + len("shout")
    if result["capabilities"].get("semanticTokensProvider"):  # (converted whole)
        found = editor.result("textDocument/semanticTokens/full", {"textDocument": {"uri": uni}})
        data, line_no, start, spans = found["data"], 0, 0, set()
        for i in range(0, len(data), 5):
            line_no, start = (line_no + data[i], data[i + 1]) if data[i] else (
                line_no, start + data[i + 1])  # fmt: skip
            spans.add((line_no, start, data[i + 2]))
        assert (1, upper, len("upper")) in spans, spans
    assert editor.shutdown() == 0


def test_several_folders_are_several_sessions(project: Project, editor: LspProcess) -> None:
    other = project.root / "other"
    editor.result(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": {},
            "workspaceFolders": [
                {"uri": project.root.as_uri(), "name": "p"},
                {"uri": other.as_uri(), "name": "o"},
            ],
        },
    )
    editor.notify("initialized", {})
    tool = editor.open(other / "tool.py")
    assert "helper" in json.dumps(editor.result("textDocument/hover", at(tool, 0, 5)))
    sessions = project.env.json("sessions")["sessions"]
    roots = {Path(s["root"]) for s in sessions if s["clients"]}
    assert {project.root.resolve(), other.resolve()} <= roots
    assert editor.shutdown() == 0


def test_a_pump_that_cannot_hand_over_copies(project: Project, tmp_path: Path) -> None:
    """stdin a file (no handoff): the pump binds and copies; the daemon ends after exit."""
    script = tmp_path / "in"
    init = {"processId": None, "rootUri": project.root.as_uri(), "capabilities": {}}
    script.write_bytes(b"".join(frame({"jsonrpc": "2.0", **m}) for m in [
        {"id": 1, "method": "initialize", "params": init},
        {"method": "initialized", "params": {}},
        {"id": 2, "method": "shutdown"},
        {"method": "exit"},
    ]))  # fmt: skip
    with script.open("rb") as stdin:
        done = subprocess.run([CODEWARD, "--socket", str(project.env.socket), "lsp"],
                              stdin=stdin, capture_output=True, env=project.env.vars,
                              timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    bodies = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in
              done.stdout.split(b"Content-Length")[1:]]  # fmt: skip
    assert [b.get("id") for b in bodies if "id" in b] == [1, 2]
    assert bodies[0]["result"]["capabilities"]["hoverProvider"]


def test_no_daemon_and_no_autostart_exits_3(tmp_path: Path) -> None:
    argv = [CODEWARD, "--no-autostart", "--socket", str(tmp_path / "none.sock"), "lsp"]
    done = subprocess.run(argv, stdin=subprocess.PIPE, capture_output=True, timeout=60)
    assert done.returncode == 3 and b"daemon" in done.stderr and done.stdout == b""


def test_an_initialize_without_a_folder_says_what_to_do(
    project: Project, editor: LspProcess
) -> None:
    reply = editor.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert reply["error"]["code"] == -32803
    assert "open a project folder" in reply["error"]["message"]
    assert reply["error"]["data"]["kind"] == "no_session"
    later = editor.request("textDocument/hover", at(project.main.as_uri(), 0, 0))
    assert later["error"]["data"]["kind"] == "no_session"
    assert editor.shutdown() == 0


@pytest.mark.servers("gopls")
def test_go_through_gopls(project: Project, editor: LspProcess) -> None:
    go = project.root.parent / "gomod"
    capabilities = editor.initialize(go)["capabilities"]
    assert capabilities["definitionProvider"]
    main = editor.open(go / "main.go", language="go")
    lines = (go / "main.go").read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if "lib.Add(1" in line)
    found = editor.result("textDocument/definition", at(main, row, lines[row].index("Add(1")))
    targets = found if isinstance(found, list) else [found]
    assert {t.get("uri", t.get("targetUri")) for t in targets} == {(go / "lib/lib.go").as_uri()}
    hover = editor.result("textDocument/hover", at(main, row, lines[row].index("Add(1")))
    assert "sum of a and b" in json.dumps(hover)
    assert editor.shutdown() == 0


@pytest.mark.servers("tombi")
def test_a_later_languages_server_is_registered(project: Project, editor: LspProcess) -> None:
    """pyproject.toml's server (tombi) is not among the Python root's at initialize: what it
    offers beyond them is registered for TOML documents when one opens."""
    folding = {"dynamicRegistration": True}
    capabilities = editor.initialize(project.root, textDocument={"foldingRange": folding})
    assert "foldingRangeProvider" not in capabilities["capabilities"]
    toml = editor.open(project.root / "pyproject.toml", language="toml")
    asked = editor.wait_for(lambda m: m.get("method") == "client/registerCapability")
    (registration,) = asked["params"]["registrations"]
    assert registration["method"] == "textDocument/foldingRange"
    assert registration["registerOptions"]["documentSelector"] == [{"language": "toml"}]
    # tombi (a tower-lsp server) may answer a request beside the didOpen before it, with
    # null: asked again until it has read the document
    folded = None
    for _ in range(50):
        folded = editor.result("textDocument/foldingRange", {"textDocument": {"uri": toml}})
        if folded is not None:
            break
    assert isinstance(folded, list)
    main = editor.open(project.main)
    none = editor.request("textDocument/foldingRange", {"textDocument": {"uri": main}})
    assert none["error"]["code"] == -32601
    assert editor.shutdown() == 0
