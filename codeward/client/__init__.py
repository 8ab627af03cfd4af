"""The thin client: a blocking socket client, autostart, the CLI and the MCP bridge.

Imports `codeward.protocol` (its stdlib-only modules) and never `codeward.daemon` or trio:
`codeward status` must start fast.
"""
