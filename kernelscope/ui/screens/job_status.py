"""The status and keys lines under a job's phases (the capture screen, the run screen): one table of
state -> (status, keys) per screen, shown the same way by both."""

from __future__ import annotations

from textual.widgets import Static


def show_job_state(status: Static, keys: Static, state: str, lines: dict[str, tuple[str, str]]) -> None:
    """``lines[state]`` into the two lines; a failed state marks the status as an error. A state the
    table does not name leaves both as they are."""
    status.set_class(state == "failed", "-error")
    if state in lines:
        text, key_text = lines[state]
        status.update(text)
        keys.update(key_text)
