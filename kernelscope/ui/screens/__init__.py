"""Screens of the explorer: gallery, explorer, live capture, options form, editor, dialogs."""
