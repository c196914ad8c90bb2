"""Whole jobs in the browser: the rank picker, the job keys and the cross-rank screen."""
