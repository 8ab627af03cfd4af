"""The trio daemon: listener, connections, sessions, sandbox, language servers, tools."""
