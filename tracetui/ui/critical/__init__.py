"""The critical path in the browser: the main screen's P and walk (path_actions), the path screen."""
