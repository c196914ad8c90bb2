"""Memory in the browser: the memory screen (``M``) and the peak key (``^``) of the main screen."""
