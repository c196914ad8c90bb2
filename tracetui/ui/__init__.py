"""Textual user interface of tracetui.

Only this package imports textual.  Its generic widgets (``vtree.VirtualTree``,
``timeline.TimelineStrip``) work over small protocols and plain numpy arrays and do
not import the trace model; ``timescale`` holds the pure formatting helpers they share.
"""
