"""The Python API: ``kernelscope.capture(fn, *args, out=...)`` and ``with kernelscope.record(out): ...``.

``capture`` runs the same child-process capture as ``kernelscope capture`` (capture/runner.py): the
child imports the function's file and names the function by its top-level name, and makes inputs
of the shapes, dtypes and value ranges of the tensors passed here (random values: kernels depend on
shapes, not on values). ``record`` records what a block compiles in this process
(capture/recorder.py). Both return a ``BundleSummary``: the folder, the status, the graphs and
kernels, and the full summary that ``kernelscope show`` prints.

Imported by ``kernelscope`` only when called, so ``import kernelscope`` stays free of side effects.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.io import BundleError
from kernelscope.bundle.model import Bundle
from kernelscope.textsafe import one_line
from kernelscope.units import plural


class CaptureError(BundleError):
    """A capture that could not be made; the message is one line saying what to do."""


@dataclass
class BundleSummary:
    """A bundle just written: ``path``, ``status`` ("ok" / "failed"), ``error``, ``graphs`` (ids),
    ``kernels`` (names in launch order), ``origin``; ``text()`` is what ``kernelscope show`` prints."""

    path: Path
    status: str
    error: str = ""
    origin: str = ""
    graphs: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    bundle: Bundle | None = field(default=None, repr=False)

    @classmethod
    def of(cls, bundle: Bundle, path: str | os.PathLike) -> BundleSummary:
        from kernelscope.bundle.origin import origin_of

        return cls(Path(path), bundle.status, bundle.error, origin_of(bundle.target), [g.id for g in bundle.graphs],
                   [k.name for k in bundle.kernels], bundle)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def text(self) -> str:
        from kernelscope.show import summary_text

        return summary_text(self.bundle) if self.bundle is not None else str(self)

    def __str__(self) -> str:
        state = "" if self.ok else f" [FAILED: {self.error}]"
        return f"{self.path}: {len(self.graphs)} graph(s), {len(self.kernels)} kernel(s){state}"


_OPTION_NAMES = ("mode", "dynamic", "fullgraph", "backward", "device", "no_grad", "inference_mode", "eval",
                 "timeout", "passes", "preview")


def _target_of(fn: Any) -> tuple[str, str, Any]:
    """(file, top-level name, the object named) for a function, an nn.Module class or instance."""
    obj = fn
    if not inspect.isfunction(obj) and not inspect.isclass(obj):
        cls = type(obj)
        if any(c.__name__ == "Module" and c.__module__.startswith("torch.nn") for c in cls.__mro__):
            obj = cls  # a module instance: its class, constructed in the child without arguments
        else:
            raise CaptureError(f"kernelscope.capture takes a function or an nn.Module (class or instance), "
                               f"not a {cls.__name__}")
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    try:
        file = inspect.getsourcefile(obj)
    except TypeError:
        file = None
    where = f"{obj.__module__}.{name}" if getattr(obj, "__module__", None) else name
    if not file or not Path(file).is_file():
        raise CaptureError(f"{where} is not defined in a .py file (a notebook cell?): the capture child imports "
                           "its file; put it in a module (e.g. model.py), import it from there and pass it again, "
                           "or use `with kernelscope.record(out): ...` around its call")
    if "." in name or "<" in name:
        raise CaptureError(f"{where} is not at the top level of {Path(file).name}: the capture child finds the "
                           "function by its name in the file; define it at module level")
    return str(Path(file).resolve()), name, obj


def _spec_of(value: Any, index: int) -> str:
    """An input as the --args spec the child makes it from: shape, dtype, grad, an integer's range."""
    from kernelscope.target import DTYPES

    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return repr(value)
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        raise CaptureError(f"argument {index + 1} is a {type(value).__name__}: kernelscope.capture passes tensors and "
                           "numbers (described by shape and dtype); for others define NAME_inputs(device) next to "
                           "the function and pass no arguments")
    dtype = str(value.dtype).replace("torch.", "")
    if dtype.startswith(("int", "uint")) and value.numel() and (value.is_meta or value.device.type == "meta"):
        raise CaptureError(f"argument {index + 1} is an integer tensor on the meta device: it holds no values to "
                           "take the range of its ids from; pass a real tensor (its values set the range)")
    short = next((k for k, v in DTYPES.items() if v == dtype and len(k) <= 4), None)
    if short is None:
        raise CaptureError(f"argument {index + 1}: dtype {dtype} has no --args spelling; use one of "
                           f"{', '.join(sorted({k for k in DTYPES if len(k) <= 4}))}")
    text = f"{short}[{', '.join(str(int(s)) for s in value.shape)}]"
    if dtype.startswith(("int", "uint")) and value.numel():
        try:
            low, high = int(value.min()), int(value.max()) + 1  # ids stay valid for the table they index
        except (RuntimeError, TypeError, ValueError) as exc:
            raise CaptureError(f"argument {index + 1}: cannot read its values for the range of its ids "
                               f"({' '.join(str(exc).split())[:200]}); pass a plain tensor") from None
        text += f" {low}..{high}"
    if value.requires_grad:
        text += " grad"
    return text


_BOOL_OPTIONS = ("fullgraph", "backward", "no_grad", "inference_mode", "eval", "passes")


def _check_options(options: dict[str, Any]) -> None:
    """CaptureError (one line) for an option of the wrong kind or value, before anything starts."""
    import math

    from kernelscope.capture.spec import MODES, PREVIEW_ARCHES

    for name in _BOOL_OPTIONS:
        if name in options and not isinstance(options[name], bool):
            raise CaptureError(f"kernelscope.capture: {name}={options[name]!r}: pass True or False")
    if "dynamic" in options and options["dynamic"] is not None and not isinstance(options["dynamic"], bool):
        raise CaptureError(f"kernelscope.capture: dynamic={options['dynamic']!r}: pass True, False or None")
    mode = options.get("mode", "default")
    if not isinstance(mode, str) or mode not in MODES:
        raise CaptureError(f"kernelscope.capture: mode={mode!r} is not a torch.compile mode; use one of "
                           f"{', '.join(MODES)}")
    device = options.get("device")
    if device is not None and not (isinstance(device, str) and re.fullmatch(r"cpu|cuda(:\d+)?", device)):
        raise CaptureError(f"kernelscope.capture: device={device!r}: kernelscope captures on 'cpu' or 'cuda' "
                           "(or 'cuda:N'); leave it out to use the GPU when there is one")
    timeout = options.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < math.inf):
        raise CaptureError(f"kernelscope.capture: timeout={timeout!r}: pass a positive number of seconds")
    preview = options.get("preview")
    if preview is not None and preview not in PREVIEW_ARCHES:
        raise CaptureError(f"kernelscope.capture: preview={preview!r}: use one of {', '.join(PREVIEW_ARCHES)}")


def capture(fn: Any, *args: Any, out: str | os.PathLike | None = None, force: bool = False,
            **capture_options: Any) -> BundleSummary:
    """Compile ``fn(*args)`` in a child process, as ``kernelscope capture`` does, and write a bundle
    at ``out`` (default: a new folder under ./kernelscope-captures). ``capture_options``: mode,
    dynamic, fullgraph, backward, device, no_grad, inference_mode, eval, timeout, passes, preview.
    Raises CaptureError (one line) when no bundle could be made."""
    from kernelscope.capture.runner import Capture, default_out
    from kernelscope.capture.runner import CaptureError as RunnerError
    from kernelscope.capture.spec import CaptureOptions, CaptureSpec
    from kernelscope.target import TargetError, resolve_target

    unknown = sorted(set(capture_options) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(f"kernelscope.capture: unknown option(s) {', '.join(unknown)}; "
                        f"known: {', '.join(_OPTION_NAMES)}")
    _check_options(capture_options)
    file, name, _obj = _target_of(fn)
    args_text = ", ".join(_spec_of(v, i) for i, v in enumerate(args)) if args else None
    try:
        target = resolve_target(f"{file}::{name}")
        options = CaptureOptions(**{k: v for k, v in capture_options.items()})
        spec = CaptureSpec.build(target, args_text, options, inputs_hint="pass its arguments")
    except TargetError as exc:
        raise CaptureError(str(exc)) from exc
    dest = Path(out) if out is not None else default_out(target)
    try:
        result = Capture(spec, dest, replace=force).run()
    except RunnerError as exc:
        raise CaptureError(str(exc)) from exc
    if result.bundle is None:
        raise CaptureError(result.message)
    return BundleSummary.of(result.bundle, dest)


def _caller_outside_kernelscope() -> tuple[str, int]:
    """(file, line) of the code that called into kernelscope ("" for a notebook cell)."""
    here = str(Path(__file__).resolve().parent) + os.sep
    frame = sys._getframe(1)
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(here):
        frame = frame.f_back
    if frame is None:
        return "", 0
    file = Path(frame.f_code.co_filename)
    return (str(file.resolve()) if file.is_file() else ""), frame.f_lineno


class record:  # noqa: N801  (used as `with kernelscope.record(out):`, like a function)
    """``with kernelscope.record(out) as rec: ...`` records what the block compiles in this process;
    afterwards ``rec.summary`` is the bundle's ``BundleSummary``. ``force=True`` replaces a bundle at
    ``out``. An exception in the block still writes what was compiled (marked failed) and goes on."""

    def __init__(self, out: str | os.PathLike, *, force: bool = False):
        self._where = _caller_outside_kernelscope()
        self.out = Path(out).absolute()
        self.force = force
        self.summary: BundleSummary | None = None
        self._recording = None
        self._state = "not started"  # then recording, written or not written

    def __repr__(self) -> str:
        """What it records (the block, where), into which folder, and how far it got: ``<kernelscope.record:
        what the block at train.py:12 compiles -> /runs/out (written: 2 graphs, 5 kernels)>``."""
        file, line = self._where
        block = f"the block at {Path(file).name}:{line}" if file else "the block"
        state = self._state
        if self.summary is not None:
            s = self.summary
            error = one_line(s.error)
            state += f": {plural(len(s.graphs), 'graph')}, {plural(len(s.kernels), 'kernel')}" + (
                "" if s.ok else f"; failed: {error if len(error) <= 120 else error[:119] + '…'}")
        return (f"<kernelscope.record: what {block} compiles -> {self.out}"
                + (", replacing a bundle there (force=True)" if self.force else "") + f" ({state})>")

    def __enter__(self) -> record:
        from kernelscope.capture.recorder import Recording

        # torch's trace handler, its caches and the environment it reads are the process's own: two blocks
        # recording at once (two threads, or one inside another) would write into each other's bundles.
        if not _RECORDING.acquire(blocking=False):
            raise CaptureError("kernelscope.record is already recording in this process (another thread, or an "
                               "enclosing block): torch's trace settings are process-wide, so record one block "
                               "at a time")
        try:
            self._recording = Recording(self.out, replace=self.force, where=self._where)
            self._recording.__enter__()
        except BaseException:
            _RECORDING.release()
            raise
        self._state = "recording"
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._state = "not written"
        try:
            self._recording.__exit__(exc_type, exc, tb)
        except Exception as failed:
            if exc is None:
                raise
            # The block's own exception is what the caller must see; the bundle's failure goes with it.
            exc.add_note(f"kernelscope.record could not write {self.out}: {' '.join(str(failed).split())[:300]}")
            return False
        finally:
            _RECORDING.release()
        self.summary = BundleSummary.of(self._recording.bundle, self.out)
        self._state = "written"
        return False


_RECORDING = threading.Lock()  # held while a record block runs
