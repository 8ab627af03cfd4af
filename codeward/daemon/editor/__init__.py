"""The editor dialect: `codeward lsp`'s connection, where the daemon is the editor's
language server (LSP 3.17) in front of the root's shared servers.

`dialect.EditorDialect` takes the frames (`protocol.lsp.LspMachine` makes them events);
`workspace` holds the editor's roots and their sessions; `offers` answers `initialize`
with the servers' merged capabilities; `forward` sends requests to the servers through
each session's `LanguageService`; `convert` moves positions between the editor's
encoding and a server's; `buffers` keeps the editor's open documents; `diagnostics`
pushes and answers each file's diagnostics.
"""
