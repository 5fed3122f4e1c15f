"""Costs: price books by shape, and cost over the measuring window."""
