"""The summaries screen (``s``): the tables of ``tracetui summary``, sortable, Enter to a row's occurrences."""
