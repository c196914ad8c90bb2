"""Findings in the browser (``F``): the findings screen, its list, and the main screen's keys and worker."""
