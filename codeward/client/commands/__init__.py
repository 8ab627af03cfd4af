"""The CLI's commands, grouped by what they do; each `cmd_NAME(inv) -> exit code`."""
