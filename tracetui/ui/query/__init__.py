"""SQL in the browser (issue 30, docs/query.md): the ``:`` query bar, the result table screen
and the main screen's query keys."""
