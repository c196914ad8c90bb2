"""The detail pane (any model's sections) and the raw-args screen of the selected event."""
