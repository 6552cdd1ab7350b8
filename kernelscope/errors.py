"""The one error every command turns into a one-line message and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input; printed as one line, exit status 2."""
