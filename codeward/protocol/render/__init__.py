"""Human output: pure functions from result dicts (shaped as docs/PROTOCOL.md says) to text,
a module per family of results.

Locations print as `path:line:col: text`, as compilers and grep do. Every renderer returns
the lines for stdout; `notes` gives the remarks for stderr (partial, truncated, ...);
`tool_text` a tool's result as an agent reads it.
"""
