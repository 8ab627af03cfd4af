"""Code intelligence: shaping language servers' answers into the tools' results, safely."""
