"""Widgets of the browser and the Textual-free row/text models behind them."""
