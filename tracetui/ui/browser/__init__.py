"""The browser's screens: the main screen (tree, detail, timeline, status line), loading, help,
export and the small dialogs."""
