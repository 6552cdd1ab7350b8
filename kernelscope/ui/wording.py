"""CLI words in a capture's messages, said as the UI's own controls.

The capture child and the spec checks speak to the command line ("drop --fullgraph"); inside the
UI the same fix is a checkbox or a field of the options form (``o``). One table, so a new message
with a flag gets its UI words here. Pure text: no Textual.
"""

from __future__ import annotations

# (what the CLI says, what the UI says instead); longer phrases first, a phrase matched once.
CLI_TO_UI: tuple[tuple[str, str], ...] = (
    ("drop --fullgraph", "untick fullgraph in the options (o)"),
    ("drop --no-grad / --inference-mode", "set grad to 'grad on' in the options (o)"),
    ("drop --eval", "untick eval in the options (o)"),
    ("use --device cpu", "pick device cpu in the options (o)"),
    ("use --mode default or reduce-overhead with --preview", "pick mode default or reduce-overhead in the options (o)"),
    ("pass smaller --args shapes", "give smaller inputs in the options (o)"),
    ("try smaller --args shapes", "try smaller inputs in the options (o)"),
    ("add ' grad' to an --args", "add ' grad' to an inputs"),
    ('pass --args "f32[1024], ..."', 'give inputs like "f32[1024], ..." in the options (o)'),
    ("give input shapes like --args", "give inputs like"),
    ("--timeout must be", "timeout must be"),
    ("--args item", "inputs item"),
    ("empty --args", "empty inputs"),
    ("--backward needs", "backward needs"),
    ("--preview", "a preview device"),
    ("--fullgraph", "fullgraph"),
    ("--mode ", "mode "),
)


def in_ui_words(message: str) -> str:
    """``message`` with each CLI flag phrase replaced by the control that does the same in the UI."""
    for cli, ui in CLI_TO_UI:
        message = message.replace(cli, ui)
    return message
