"""Import every tool module, so that each registers its tools."""
