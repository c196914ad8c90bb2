"""Plots: :class:`~.plot_widget.PlotWidget` draws a :class:`~tracetui.ui.view.plot.PlotModel`."""
