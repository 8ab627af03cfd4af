"""The wire format, sans-IO: messages, framing, error kinds and method shapes.

Imports msgspec and the standard library only.
"""
