"""The timeline: a strip of tracks over a time window, and the trace's timeline with its keys."""
