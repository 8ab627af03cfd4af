"""Tools: declared once in the registry; importing this package registers them all."""
