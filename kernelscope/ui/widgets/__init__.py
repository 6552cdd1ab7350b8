"""Widgets of the explorer, one per module; imported by the screens that mount them."""
