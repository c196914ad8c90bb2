"""The tree widget (:class:`~.virtual_tree.VirtualTree`): any row source, rows drawn on demand."""
