"""What a bundle came from and what can be done with it, read from its manifest's ``target``.

``target["origin"]`` is one of ORIGINS: ``capture`` (kernelscope compiled a function: it can be
compiled and rerun again), ``run`` (``kernelscope run -- COMMAND``: ``target["command"]`` is the
argv, ``target["cwd"]`` where it ran, ``target["stopped"]`` why the program stopped), ``record``
(``with kernelscope.record(out):`` in someone's process: ``target["file"]``/``["line"]`` where the
block was) or ``open`` (``kernelscope open`` of a TORCH_TRACE). Bundles written before the field
existed are told apart by what they hold (an opened trace has ``kind: torch_trace``).
Plain dicts in, text out: the gallery calls it on raw JSON before any bundle code is loaded.
"""

from __future__ import annotations

import shlex
from typing import Any

CAPTURE, RUN, RECORD, OPEN = "capture", "run", "record", "open"
ORIGINS = (CAPTURE, RUN, RECORD, OPEN)


def origin_of(target: dict[str, Any]) -> str:
    origin = target.get("origin")
    if origin in ORIGINS:
        return origin
    return OPEN if target.get("kind") == "torch_trace" else CAPTURE


def command_text(target: dict[str, Any], limit: int = 100) -> str:
    """The command as a shell line: the program by its name (``python``, not the venv's full path);
    past ``limit``, long paths as ``…/train.py`` (the script's name is what tells runs apart), then
    cut at the end."""
    command = target.get("command")
    if not (isinstance(command, list) and command):
        text = str(target.get("spec", ""))
        return text if len(text) <= limit else text[:limit - 1] + "…"
    argv = [str(a) for a in command]
    argv[0] = argv[0].rsplit("/", 1)[-1] or argv[0]
    text = shlex.join(argv)
    if len(text) > limit:
        text = " ".join("…/" + shlex.quote(a.rsplit("/", 1)[-1]) if "/" in a.rstrip("/") and len(a) > 24
                        else shlex.quote(a) for a in argv)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def origin_line(target: dict[str, Any]) -> str:
    """``run of `python train.py --steps 5`: stopped after 2 graphs ...`` (one line)."""
    origin = origin_of(target)
    if origin == RUN:
        stopped = target.get("stopped") or {}
        why = stopped.get("message") if isinstance(stopped, dict) else ""
        return f"run of `{command_text(target)}`" + (f": {why}" if why else "")
    if origin == RECORD:
        where = f" at {target.get('file')}:{target.get('line')}" if target.get("file") else ""
        return f"record of a block{where} in a Python process"
    if origin == OPEN:
        return f"open of the TORCH_TRACE {target.get('spec', '?')}"
    name = target.get("name") or target.get("spec") or "?"
    return f"capture of {name}" + (f" ({target['file']})" if target.get("file") and target.get("name") else "")


def actions(target: dict[str, Any], has_code: bool = True) -> list[str]:
    """What can be done with a bundle of this origin, as the commands that do it; ``has_code``: whether it
    holds output code to run (a trace of another backend, or of failed compiles only, has none to bench)."""
    origin = origin_of(target)
    if origin == CAPTURE:
        return ["bench (reruns the function)", "capture again with other options", "report", "diff"]
    bench = ["bench (runs the bundle's output code and FX graphs on inputs of the recorded shapes)"] if has_code else []
    done = [*bench, "report", "diff"]
    if origin == RUN:
        done.append("run the command again (kernelscope run -- ...)")
    return done


def short_name(target: dict[str, Any]) -> str:
    """A bundle's name in a list: the function, the program's script, the block's file, the trace."""
    origin = origin_of(target)
    if origin == CAPTURE and target.get("name"):
        return str(target["name"])
    file = target.get("file") or ""
    if origin in (RUN, RECORD) and file:
        return str(file).replace("\\", "/").rsplit("/", 1)[-1]
    if origin == RUN:
        return command_text(target, 40)
    spec = str(target.get("spec") or "")
    return spec.rstrip("/").rsplit("/", 1)[-1] or "bundle"


def run_state(options: dict[str, Any], *, quiet_default: bool = False) -> str:
    """How the capture called the function: "no_grad · eval", "inference_mode", "grad · train".
    Bundles older than these options say nothing (""); ``quiet_default`` says nothing for grad on
    and train (what torch does unless told otherwise)."""
    grad = options.get("grad_mode") or ("inference_mode" if options.get("inference_mode") else
                                        "no_grad" if options.get("no_grad") else "")
    train = options.get("train") or ("eval" if options.get("eval") else "")
    if not grad and not train:
        return ""
    parts = [p for p in (grad, train) if p and not (quiet_default and p in ("grad", "train"))]
    return " · ".join(parts)
