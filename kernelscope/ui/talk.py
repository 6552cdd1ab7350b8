"""``kernelscope talk [SCRIPT]``: step through a prepared sequence of captures with one key.

A talk script is a small TOML (or JSON) file::

    title = "What torch.compile does to your function"
    [[step]]
    bundle = "add_relu"          # a bundle folder, relative to the script
    pane = "presentation"        # presentation, kernels, source, fx, kernel, output, breaks, info, pipeline
    kernel = "fused_add"         # optional: a kernel by name, or part of its name
    title = "add + relu: two kernels become one"
    note = "one line the audience reads"

space or → is the next step, ← the one before; each step opens its capture at its pane, so a speaker
never types a path on stage. Without SCRIPT the seed story ships with kernelscope (samples/talk/).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

PANES = ("presentation", "kernels", "source", "fx", "kernel", "output", "breaks", "info", "pipeline")
DEFAULT_TALK = Path(__file__).resolve().parent.parent.parent / "samples" / "talk" / "talk.toml"


class TalkError(Exception):
    """A talk script that cannot be used; one line that names the problem."""


@dataclass
class Step:
    bundle: Path
    pane: str = "presentation"
    kernel: str = ""
    title: str = ""
    note: str = ""


@dataclass
class Talk:
    path: Path
    title: str = ""
    steps: list[Step] = field(default_factory=list)


def load_talk(path: str | Path) -> Talk:
    """Read and check a talk script: every bundle folder exists and every pane is known."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "talk.toml"
    if not p.is_file():
        raise TalkError(f"{path}: no such talk script; give a .toml or .json file (see `kernelscope talk --help`)")
    try:
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            try:
                import tomllib
            except ImportError as exc:  # Python 3.10
                raise TalkError(f"{p}: TOML talk scripts need Python 3.11+; write it as JSON") from exc
            data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TalkError(f"{p}: not a readable talk script ({str(exc).splitlines()[0]})") from exc
    raw = data.get("step", data.get("steps")) if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise TalkError(f"{p}: no steps; add [[step]] tables with bundle, pane, title and note")
    steps = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not item.get("bundle"):
            raise TalkError(f"{p}: step {n} has no bundle; give the capture's folder, relative to the script")
        folder = (p.parent / str(item["bundle"])).resolve()
        if not (folder / "bundle.json").is_file():
            raise TalkError(f"{p}: step {n}: {item['bundle']} is not a bundle folder (no bundle.json in {folder})")
        pane = str(item.get("pane") or "presentation")
        if pane not in PANES:
            raise TalkError(f"{p}: step {n}: unknown pane {pane!r}; use one of {', '.join(PANES)}")
        steps.append(Step(folder, pane, str(item.get("kernel") or ""), str(item.get("title") or ""),
                          str(item.get("note") or "")))
    return Talk(p, str(data.get("title") or ""), steps)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", nargs="?", help="a talk script (.toml or .json); default: the seed story shipped "
                                            "with kernelscope (samples/talk/talk.toml)")
    p.add_argument("--light", action="store_true", help="light theme (projectors often read better)")


def run(args: argparse.Namespace) -> int:
    try:
        talk = load_talk(args.script or DEFAULT_TALK)
    except TalkError as exc:
        print(f"kernelscope: {exc}", file=sys.stderr)
        return 2
    from kernelscope.ui.app import KernelscopeApp

    app = KernelscopeApp(talk=talk, theme="textual-light" if args.light else None)
    app.run()
    return int(app.return_code or 0)
