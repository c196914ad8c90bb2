"""Analyses over a loaded trace (kernel categories, summaries); headless, no textual imports."""
