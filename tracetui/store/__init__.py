"""What tracetui keeps on disk: parsed traces (`traces`) and stored summaries (`summaries`)."""
