"""The diff browser: two runs compared (``tracetui diff A B``, docs/diff.md)."""
