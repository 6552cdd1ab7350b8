"""The capture contract: what a capture asks for and how the child answers. No torch.

One shape for a capture request, whoever makes it: the CLI (``spec_from_args``), the UI
(``CaptureRequest.check()``) and bench (``kernelscope bench TARGET`` captures first) build a
``CaptureSpec``; the parent writes it into the child's request file (``to_dict``) and the child
reads it back (``from_dict``, which checks every field's type). Here too: the capture flags
(``add_capture_arguments``), the exit codes of a child, and the event stream it writes.

Request file (JSON, one object): ``spec`` (this contract) and the job's own keys that
``capture.job.ChildJob`` adds: work, staging, event_fd, t_spawn, lifeline_fd, parent_pid.

Event stream: one JSON object a line on the request's ``event_fd``:
``{"phase": ..., "message": ..., "time": ..., **counts}``; phases: start, inputs, compile,
backward, collect, passes, note, error (with ``kind``), done.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kernelscope.target import Target, TargetError, parse_calls, spec_dicts

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
PREVIEW_ARCHES = ("sm_80", "sm_89", "sm_90", "sm_100", "sm_120")  # --preview (capture/preview_patches.py)
DEVICES = ("cuda", "cpu")

# Exit status of a child (capture or bench).
EXIT_OK = 0  # captured
EXIT_FAILED = 3  # captured but failed: a bundle marked failed was written
EXIT_INTERNAL = 4  # crashed
EXIT_NO_BUNDLE = 5  # failed before compiling anything (bad target or inputs, no GPU): no bundle

# What a bundle records of its target; the rest of Target (sample options, description) stays here.
TARGET_KEYS = ("spec", "file", "name", "is_class", "is_sample", "first_line", "last_line")

MAX_EVENT_TEXT = 32_000  # characters of one event's message (and traceback)
MAX_EVENT_LINE = 1 << 20  # bytes: a longer line from the child is dropped (with a note), never buffered whole


class SpecError(TargetError):
    """A capture request that cannot run (contradicting options, a malformed request file); one line."""


@dataclass
class CaptureOptions:
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    backward: bool = False
    device: str | None = None  # None: cuda when the child sees one
    passes: bool = False  # dump every MLIR pass (MLIR_ENABLE_DUMP)
    timeout: float | None = None  # seconds
    no_grad: bool = False  # run the compiled calls under torch.no_grad()
    inference_mode: bool = False  # ... under torch.inference_mode()
    eval: bool = False  # module.eval() first, when the target is (or holds) an nn.Module
    preview: str | None = None  # "sm_90": what Inductor emits for that GPU, generated here, never run

    def check(self) -> CaptureOptions:
        """Raises SpecError (one line) for options that contradict each other; returns self."""
        if self.mode not in MODES:
            raise SpecError(f"--mode {self.mode}: not a torch.compile mode; use one of {', '.join(MODES)}")
        if self.backward and (self.no_grad or self.inference_mode):
            raise SpecError("--backward needs grad: drop --no-grad / --inference-mode (or the target's OPTIONS)")
        if self.preview and self.mode.startswith("max-autotune"):
            raise SpecError(f"--mode {self.mode} cannot be previewed: it picks kernels by timing them on the GPU; "
                            "use --mode default or reduce-overhead with --preview")
        if self.timeout is not None and not 0 < self.timeout < float("inf"):  # not nan either
            raise SpecError("--timeout must be a positive number of seconds")
        return self

    def bundle_options(self) -> dict[str, Any]:
        """The options as a bundle records them (bundle.json "options"; the child adds what it resolved)."""
        out = {k: getattr(self, k) for k in ("mode", "dynamic", "fullgraph", "backward", "device", "no_grad",
                                             "inference_mode", "eval")}
        if self.preview:
            out["preview"] = self.preview
        return out


@dataclass
class CaptureSpec:
    """One capture: the target (TARGET_KEYS), the inputs of each call, the options."""

    target: dict[str, Any]
    calls: list[list[dict[str, Any]]] | None = None  # None: the target's own inputs factory
    args_text: str = ""  # the --args text as the user wrote it (recorded in the bundle)
    options: CaptureOptions = field(default_factory=CaptureOptions)

    @classmethod
    def build(cls, target: Target, args_text: str | None = None,
              options: CaptureOptions | None = None, *, inputs_hint: str = 'pass --args "f32[1024], ..."') -> CaptureSpec:
        """A checked spec: options consistent, every call of ``args_text`` parsed, inputs present."""
        options = (options or CaptureOptions()).check()
        calls = calls_from_text(args_text)
        if calls is None and not target.has_inputs_factory:
            raise SpecError(f"{target.spec}: no inputs; {inputs_hint} or define {target.name}_inputs(device) "
                            "next to it")
        return cls(target=target_dict(target), calls=calls, args_text=args_text or "", options=options)

    @property
    def file(self) -> str:
        return str(self.target.get("file") or "")

    @property
    def name(self) -> str:
        return str(self.target.get("name") or "")

    def to_dict(self) -> dict[str, Any]:
        return {"target": dict(self.target), "calls": self.calls, "args_text": self.args_text,
                "options": asdict(self.options)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> CaptureSpec:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SpecError(f"capture request is not JSON: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> CaptureSpec:
        """The spec a request file holds; SpecError names the first field of a wrong type."""
        _need(isinstance(data, dict) and set(data) == {"target", "calls", "args_text", "options"},
              "spec", "an object with target, calls, args_text, options")
        target = data["target"]
        _need(isinstance(target, dict) and set(target) == set(TARGET_KEYS), "target",
              f"an object with {', '.join(TARGET_KEYS)}")
        for key in ("spec", "file", "name"):
            _need(isinstance(target[key], str), f"target.{key}", "a string")
        for key in ("is_class", "is_sample"):
            _need(isinstance(target[key], bool), f"target.{key}", "true or false")
        for key in ("first_line", "last_line"):
            _need(target[key] is None or _is_int(target[key]), f"target.{key}", "an integer or null")
        calls = data["calls"]
        _need(calls is None or isinstance(calls, list) and all(
            isinstance(c, list) and all(isinstance(a, dict) for a in c) for c in calls), "calls",
            "null or a list of calls, each a list of input objects")
        _need(isinstance(data["args_text"], str), "args_text", "a string")
        opts = data["options"]
        names = {f.name for f in fields(CaptureOptions)}
        _need(isinstance(opts, dict) and set(opts) == names, "options", f"an object with {', '.join(sorted(names))}")
        for key in ("fullgraph", "backward", "passes", "no_grad", "inference_mode", "eval"):
            _need(isinstance(opts[key], bool), f"options.{key}", "true or false")
        _need(opts["mode"] in MODES, "options.mode", f"one of {', '.join(MODES)}")
        _need(opts["dynamic"] is None or isinstance(opts["dynamic"], bool), "options.dynamic", "true, false or null")
        _need(opts["device"] is None or opts["device"] in DEVICES, "options.device", "cuda, cpu or null")
        _need(opts["preview"] is None or opts["preview"] in PREVIEW_ARCHES, "options.preview",
              f"null or one of {', '.join(PREVIEW_ARCHES)}")
        _need(opts["timeout"] is None or (_is_int(opts["timeout"]) or isinstance(opts["timeout"], float)),
              "options.timeout", "a number of seconds or null")
        return cls(target=dict(target), calls=calls, args_text=data["args_text"], options=CaptureOptions(**opts))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise SpecError(f"capture request: {where} must be {what}")


def target_dict(target: Target) -> dict[str, Any]:
    return {k: getattr(target, k) for k in TARGET_KEYS}


def calls_from_text(text: str | None) -> list[list[dict[str, Any]]] | None:
    """The --args text, every call (';' separates them), as the input objects a child reads; None for None."""
    if text is None:
        return None
    return [spec_dicts(call) for call in parse_calls(text)]


# -- the capture flags (capture, bench, and `kernelscope TARGET`) ------------------------------------------
def add_capture_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--args", dest="args_spec", metavar="SPEC",
                   help='input shapes as FX prints them: "f32[4096, 1024], f32[1024]"; add " grad" for requires_grad; '
                        'separate several calls with ";" to see recompiles')
    p.add_argument("--mode", choices=MODES, default=None, help="torch.compile mode (default: default)")
    dyn = p.add_mutually_exclusive_group()
    dyn.add_argument("--dynamic", dest="dynamic", action="store_true", default=None, help="dynamic=True")
    dyn.add_argument("--no-dynamic", dest="dynamic", action="store_false", help="dynamic=False")
    p.add_argument("--fullgraph", action="store_true", default=None, help="fullgraph=True: a graph break is an error")
    p.add_argument("--backward", action="store_true", default=None,
                   help="also capture the backward pass (outputs summed to a scalar, then .backward())")
    p.add_argument("--device", choices=DEVICES, default=None, help="default: cuda when there is one")
    grad = p.add_mutually_exclusive_group()
    grad.add_argument("--no-grad", dest="no_grad", action="store_true", default=None,
                      help="call the compiled function under torch.no_grad() (an inference graph)")
    grad.add_argument("--inference-mode", dest="inference_mode", action="store_true", default=None,
                      help="call it under torch.inference_mode()")
    p.add_argument("--eval", dest="eval_mode", action="store_true", default=None,
                   help="module.eval() first (dropout off, batch norm running stats)")
    p.add_argument("--passes", action="store_true", help="also dump every MLIR pass of each Triton kernel")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="stop a compile that runs longer")
    p.add_argument("--preview", choices=PREVIEW_ARCHES, default=None, metavar="ARCH",
                   help="what Inductor would emit for this GPU arch (" + "|".join(PREVIEW_ARCHES) + "), with no GPU: "
                        "generated, never run")


def options_from_args(args: argparse.Namespace, target: Target) -> CaptureOptions:
    """The capture flags over the target's own OPTIONS (a sample's defaults); checked."""
    defaults = dict(target.sample_options)
    env_device = os.environ.get("KERNELSCOPE_DEVICE")
    if not args.device and env_device and env_device not in ("cuda", "cpu"):
        raise SpecError(f"KERNELSCOPE_DEVICE={env_device!r} is not a device: set it to cuda or cpu, or unset it")

    def pick(name: str, attr: str) -> bool:
        value = getattr(args, attr, None)
        return bool(value if value is not None else defaults.get(name, False))

    opts = CaptureOptions(
        mode=args.mode or defaults.get("mode", "default"),
        dynamic=args.dynamic if args.dynamic is not None else defaults.get("dynamic"),
        fullgraph=pick("fullgraph", "fullgraph"), backward=pick("backward", "backward"),
        device=args.device or os.environ.get("KERNELSCOPE_DEVICE") or None,
        passes=bool(getattr(args, "passes", False)),
        timeout=args.timeout,
        no_grad=pick("no_grad", "no_grad"), inference_mode=pick("inference_mode", "inference_mode"),
        eval=pick("eval", "eval_mode"),
        preview=getattr(args, "preview", None),
    )
    if opts.no_grad and opts.inference_mode:
        opts.no_grad = False  # inference_mode already turns grad off
    opts.check()
    if opts.preview and args.device == "cpu":
        raise SpecError("--preview and --device cpu contradict each other: a preview is for a CUDA GPU; drop one")
    return opts


def args_text_from(args: argparse.Namespace, target: Target) -> str | None:
    """--args, else the target's own OPTIONS["args"]; None when neither (the inputs factory)."""
    return args.args_spec if args.args_spec is not None else target.sample_options.get("args")


def spec_from_args(args: argparse.Namespace, target: Target) -> CaptureSpec:
    """The capture the flags ask for: options checked, --args parsed, inputs present."""
    return CaptureSpec.build(target, args_text_from(args, target), options_from_args(args, target))


# -- the event stream -------------------------------------------------------------------------------------
def _cut(text: str, limit: int = MAX_EVENT_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... ({len(text) - limit} more characters cut)"


def encode_event(phase: str, message: str = "", **counts: Any) -> str:
    """One event as its line (without the newline)."""
    counts = {k: _cut(v) if isinstance(v, str) else v for k, v in counts.items()}
    return json.dumps({"phase": phase, "message": _cut(str(message)), "time": round(time.time(), 3), **counts})


def decode_event(line: bytes | str) -> dict[str, Any] | None:
    """The event on one line; None for a blank or malformed line."""
    text = (line.decode("utf-8", "replace") if isinstance(line, bytes) else line).strip()
    if not text:
        return None
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict):
        return None
    # The user's code shares the child's process and can write forged lines to this pipe: what reaches
    # the terminal (messages, phases, kinds) has its escape sequences removed here, where it enters.
    return _clean(event)


def _clean(value: Any) -> Any:
    """``value`` with every string in it (keys too, at any depth: an event's ``environment``) printable."""
    from kernelscope.textsafe import printable

    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class Events:
    """The child's side of the event stream: writes to the request's ``event_fd`` (nothing when None)."""

    def __init__(self, fd: int | None):
        self._fh = os.fdopen(fd, "w", buffering=1) if fd is not None else None

    def emit(self, phase: str, message: str = "", **counts: Any) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(encode_event(phase, message, **counts) + "\n")
            self._fh.flush()
        except OSError:
            pass
