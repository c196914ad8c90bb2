"""What the browser shows, free of Textual: row sources and visible rows of the tree, the
detail pane's sections, timeline tracks, status parts, summary tables and the jumps.  Tests
drive these without an app; the widgets in ``tree/``, ``detail/``, ``timeline/`` draw them."""
