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
    if not p.exists():
        raise TalkError(f"{path}: no such talk script; give a .toml or .json file (see `kernelscope talk --help`)")
    from kernelscope.safefile import read_regular
    from kernelscope.textsafe import one_line, printable

    try:
        text = read_regular(p, MAX_TALK_BYTES, "talk script").decode("utf-8")
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            try:
                import tomllib
            except ImportError as exc:  # Python 3.10
                raise TalkError(f"{p}: TOML talk scripts need Python 3.11+; write it as JSON") from exc
            data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TalkError(f"{p}: not a readable talk script ({one_line(exc, 200)})") from exc
    except RecursionError as exc:  # JSON or TOML nested thousands deep: no talk script is
        raise TalkError(f"{p}: nested too deeply to be a talk script") from exc
    raw = data.get("step", data.get("steps")) if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise TalkError(f"{p}: no steps; add [[step]] tables with bundle, pane, title and note")
    steps = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not item.get("bundle"):
            raise TalkError(f"{p}: step {n} has no bundle; give the capture's folder, relative to the script")
        shown = one_line(item["bundle"], 200)
        try:
            folder = (p.parent / str(item["bundle"])).resolve()
            is_bundle = (folder / "bundle.json").is_file()
        except (OSError, ValueError) as exc:  # a NUL byte, a name too long, a loop of links
            raise TalkError(f"{p}: step {n}: {shown!r} is not a usable folder name ({one_line(exc, 120)})") from exc
        if not is_bundle:
            raise TalkError(f"{p}: step {n}: {shown} is not a bundle folder (no bundle.json in {one_line(folder)})")
        pane = str(item.get("pane") or "presentation")
        if pane not in PANES:
            raise TalkError(f"{p}: step {n}: unknown pane {one_line(pane, 80)!r}; use one of {', '.join(PANES)}")
        # Titles and notes are shown on the audience's terminal: no escape sequence gets through.
        steps.append(Step(folder, pane, one_line(item.get("kernel") or "", 500), one_line(item.get("title") or "", 500),
                          printable(str(item.get("note") or ""))[:20_000]))
    return Talk(p, one_line(data.get("title") or "", 500), steps)


MAX_TALK_BYTES = 4 << 20


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
