"""codeward: safe git, warm language servers and a Lua sandbox behind one local socket."""

__version__ = "0.1.0"
