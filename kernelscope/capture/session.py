"""One capture inside the child: load the target, make inputs, torch.compile, run, collect.

Imports torch (as do the preview's patches and the bench's measurement modules). Public hooks only: TORCH_TRACE,
TORCH_LOGS, torch.compile options; the private logger names and exception modules it listens to
are in capture/torch_hooks.py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import platform
import re
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelscope.bundle.io import save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.capture import torch_hooks
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.failures import CaptureFailure, classify, user_frame
from kernelscope.capture.inputs import describe, flatten, make_calls
from kernelscope.capture.spec import EXIT_FAILED, EXIT_NO_BUNDLE, EXIT_OK, CaptureOptions, CaptureSpec, Events
from kernelscope.units import plural

# Failures before anything was compiled: a bundle would hold nothing, so none is written.
_NO_BUNDLE_KINDS = {"no_gpu", "target", "args", "preview_refused"}


class _OutputCodeCounter(logging.Handler):
    """Counts graphs and kernels as Inductor logs output code, for progress events."""

    def __init__(self, events: Events):
        super().__init__(logging.DEBUG)
        self.events = events
        self.graphs = 0
        self.kernels = 0
        self.codes: list[str] = []  # every output code logged (the preview's sanity checks read them)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        if not msg.startswith(torch_hooks.OUTPUT_CODE_PREFIX):
            return
        self.graphs += 1
        self.codes.append(msg)
        self.kernels += msg.count("= async_compile.triton(") + msg.count("= async_compile.cpp_pybinding(")
        self.events.emit("compile", f"graph {self.graphs} generated", graphs=self.graphs, kernels=self.kernels)


def load_module(path: str):
    name = "kernelscope_user_" + Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CaptureFailure("target", f"{path}: cannot import it as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(Path(path).parent))
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        raise CaptureFailure("target", f"importing {Path(path).name} called sys.exit({exc.code!r})"
                             f"{user_frame(exc, path)}; guard it with `if __name__ == \"__main__\":`") from exc
    except Exception as exc:
        where = user_frame(exc, path)
        raise CaptureFailure("target", f"importing {Path(path).name} raised {exc.__class__.__name__}: {exc}{where}") from exc
    return module


def load_target(target: dict, device: str, fake_mode=None):
    """(module, callable): the user's file imported, the function or an nn.Module built on ``device``.
    For a preview, ``fake_mode`` is the inputs' FakeTensorMode: the file is imported under it, and a
    module is built on the meta device outside it, then placed on the faked device under it (see
    capture/preview_modules.py)."""
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        module = load_module(target["file"])
    fn = getattr(module, target["name"], None)
    if fn is None:
        raise CaptureFailure("target", f"{target['file']}: no attribute {target['name']!r} after import")
    if isinstance(fn, type):
        if not issubclass(fn, torch.nn.Module):
            raise CaptureFailure("target", f"{target['name']} is a class but not a torch.nn.Module")
        try:
            if fake_mode is not None:
                from kernelscope.capture.preview_modules import build_module, to_fake_device

                built = build_module(fn)
                with fake_mode:
                    fn = to_fake_device(built, device)
            else:
                fn = build_on(fn, device)
        except TypeError as exc:
            raise CaptureFailure("target", f"{target['name']}() needs arguments ({exc}); kernelscope constructs "
                                 "modules without arguments: give them defaults") from exc
    return module, fn


def build_on(cls, device: str):
    """``cls()`` built on ``device``, then ``.to(device)``. Off the CPU it is built under
    ``torch.device(device)`` first, so its parameters are made and initialised there (a 124M-parameter
    GPT-2 in 0.3 s on an H200 instead of 2.4 s on the host); ``.to`` then moves what ``__init__`` made
    on the CPU by name (``torch.from_numpy``, ``device="cpu"``). An ``__init__`` that cannot run there
    (it calls ``.numpy()`` on a tensor it made) is built again on the CPU, as before."""
    if device != "cpu":
        try:
            with torch.device(device):
                built = cls()
        except Exception:  # a constructor that needs arguments fails again below, with its own error
            built = None
        if built is not None:
            return built.to(device)
    return cls().to(device)


def modules_of(fn, module) -> list:
    """The nn.Modules a target is or holds: itself, a bound method's owner, the modules its code
    names as globals of its file or holds in its closure."""
    if isinstance(fn, torch.nn.Module):
        return [fn]
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return [owner]
    found = []
    code = getattr(fn, "__code__", None)
    if code is not None:
        for name in code.co_names:
            value = getattr(module, name, None)
            if isinstance(value, torch.nn.Module):
                found.append(value)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(value, torch.nn.Module):
                found.append(value)
    return found


def grad_context(options: CaptureOptions):
    """The context the compiled calls run in: torch.inference_mode(), torch.no_grad() or grad on."""
    if options.inference_mode:
        return torch.inference_mode()
    if options.no_grad:
        return torch.no_grad()
    return contextlib.nullcontext()


def _params(fn) -> list[str]:
    """The positional parameter names, so a guard's or a symbol's source (L['x']) names an input."""
    import inspect

    try:
        sig = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds and p.name != "self"]


def environment(device: str) -> dict[str, Any]:
    env = {"python": platform.python_version(), "platform": platform.platform(), "executable": sys.executable}
    env["torch"] = torch.__version__
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception:  # triton is optional on CPU machines
        env["triton"] = None
    env["cuda"] = torch.version.cuda
    env["device"] = device
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["device_name"] = props.name
        env["compute_capability"] = f"{props.major}.{props.minor}"
        env["sm_count"] = props.multi_processor_count
        env["memory_gb"] = round(props.total_memory / 2**30, 1)
        try:
            env["driver"] = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else None
        except Exception:
            env["driver"] = None
    else:
        env["device_name"] = platform.processor() or platform.machine()
        env["cpu_count"] = os.cpu_count()
        env["torch_threads"] = torch.get_num_threads()
    return env


def run(spec: CaptureSpec, work: Path, staging: Path, events: Events, t_spawn: float | None = None) -> int:
    timings: dict[str, float] = {}
    options = spec.options.bundle_options()  # what the bundle records; the child adds what it resolved
    bundle = Bundle(target={**spec.target, "origin": "capture"}, options=options)
    bundle.target["args"] = spec.args_text
    t_start = t_spawn or time.time()
    timings["import_torch"] = round(time.time() - t_start, 3)
    events.emit("start", f"torch {torch.__version__} imported", elapsed=timings["import_torch"])
    counter = _OutputCodeCounter(events)
    for logger_name in torch_hooks.OUTPUT_CODE_LOGGERS:
        logging.getLogger(logger_name).addHandler(counter)
    failure: CaptureFailure | None = None
    preview = spec.options.preview
    device = "cuda" if preview else spec.options.device or ("cuda" if torch.cuda.is_available() else "cpu")
    options["device"] = device
    bundle.options = options
    with contextlib.ExitStack() as faked:
        try:
            if preview:
                faked.enter_context(_entered_preview(preview))
            failure = _compile_and_call(spec, bundle, device, events, counter, timings)
        except CaptureFailure as exc:
            failure = exc
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            failure = classify(exc, spec.file, options)
            failure.__cause__ = exc
    if failure is not None and failure.__cause__ is not None:
        # The whole traceback goes to the capture's own stderr (the bundle's logs/stderr.txt); the user
        # sees one line.
        print("kernelscope: the capture failed with:", file=sys.stderr)
        traceback.print_exception(failure.__cause__, file=sys.stderr)
    if preview:
        failure = _check_preview(bundle, counter, failure)
    return _finish(spec, bundle, work, staging, events, counter, timings, failure, device)


def _entered_preview(arch: str):
    from kernelscope.capture import preview_patches

    try:
        return preview_patches.preview_device(arch)
    except preview_patches.PreviewError as exc:
        raise CaptureFailure("args", str(exc)) from exc


def _check_preview(bundle: Bundle, counter: _OutputCodeCounter, failure: CaptureFailure | None):
    """A preview that failed in torch (not in the user's code) or produced wrong code fails with one
    line naming the torch version."""
    from kernelscope.capture import preview_patches as pp

    spec = pp.GPUS[bundle.options["preview"]]
    bundle.environment["preview"] = {"arch": bundle.options["preview"], "device_name": spec.name,
                                     "checked": pp.torch_checked()}
    bundle.notes.append(f"PREVIEW for {bundle.options['preview']} ({spec.name}): generated on a machine without "
                        "that GPU (CUDA faked, FakeTensor inputs); nothing was run: no timings, and where Inductor "
                        "autotunes, every candidate config is kept and none is chosen")
    if pp.UNBENCHMARKED:
        n = len(pp.UNBENCHMARKED)
        bundle.notes.append(f"Inductor decides by benchmarking whether padding makes a matmul faster (pad_mm); "
                            f"the preview cannot benchmark and left {n} such matmul{'s' if n != 1 else ''} unpadded, "
                            "as a GPU does when padding does not pay")
    if failure is not None and failure.kind not in ("compile", "cuda", "internal", "user"):
        return failure
    message = failure.message if failure is not None else None
    cause = str(failure.__cause__ or "") if failure is not None else ""
    if "not linked with support for cuda" in cause:
        why = pp.GUARD_UNAVAILABLE[0] if pp.GUARD_UNAVAILABLE else "it has no CUDA device guard"
        message = (f"torch {torch.__version__} is a CPU-only build: {why}, so it cannot index, "
                   "move or differentiate tensors on the (faked) CUDA device as this function does; preview it with "
                   "a CUDA build of torch (no GPU needed: CUDA_VISIBLE_DEVICES= hides any)")
    elif "from the 'CUDA' backend" in cause or "compiled without CUDA" in cause:
        op = re.search(r"Could not run '([\w:.]+)'", cause)
        message = (f"Inductor ran a real CUDA op{f' ({op.group(1)})' if op else ''} while compiling (e.g. constant "
                   "folding a tensor constructor such as a causal mask); this machine has no CUDA to run it, so this "
                   "function cannot be previewed here")
    try:
        pp.check_preview(counter.codes, message)
    except pp.PreviewError as exc:
        return CaptureFailure("preview", str(exc))
    return failure


def _compile_and_call(spec: CaptureSpec, bundle: Bundle, device, events, counter, timings) -> CaptureFailure | None:
    opts, options, target = spec.options, bundle.options, spec.target
    preview = opts.preview
    try:
        if device == "cuda" and not torch.cuda.is_available():
            raise CaptureFailure("no_gpu", "--device cuda asked for, but torch sees no CUDA GPU here; use --device cpu")
        bundle.environment = environment(device)
        t = time.time()
        inputs_mode = contextlib.nullcontext()
        if preview:
            from kernelscope.capture.preview_patches import fake_mode

            inputs_mode = fake_mode()
        module, fn = load_target(target, device, inputs_mode if preview else None)
        with inputs_mode:
            calls = make_calls(spec, module, device)
        bundle.target["params"] = _params(fn)
        inputs = calls[0]
        bundle.target["inputs"] = [describe(v) for v in inputs]
        if len(calls) > 1:
            bundle.target["calls"] = [[describe(v) for v in call] for call in calls]
        timings["load_target"] = round(time.time() - t, 3)
        events.emit("inputs", "inputs ready: " + ", ".join(bundle.target["inputs"]))
        if opts.backward and not any(isinstance(v, torch.Tensor) and v.requires_grad for v in inputs):
            params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
            if not any(p.requires_grad for p in params):
                raise CaptureFailure("args", "--backward needs an input that requires grad: add ' grad' to an --args "
                                     "entry, e.g. \"f32[512, 1024] grad\"")
        held = modules_of(fn, module)
        if opts.eval:
            if not held:
                raise CaptureFailure("args", f"--eval: {target['name']} is not an nn.Module and holds none; drop --eval")
            for m in held:
                m.eval()
        options["grad_mode"] = "inference_mode" if opts.inference_mode else "no_grad" if opts.no_grad else "grad"
        options["train"] = ("eval" if all(not m.training for m in held) else "train") if held else None
        if preview and options["grad_mode"] != "grad" and isinstance(fn, torch.nn.Module):
            # Under no_grad / inference_mode the graph is an inference graph either way; a fake parameter
            # that requires grad would still be wrapped for autograd, which aborts without CUDA.
            for p in fn.parameters():
                p.requires_grad_(False)
        if preview and options["grad_mode"] == "grad" and torch.is_grad_enabled():
            params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in [*inputs, *params]):
                raise CaptureFailure("preview_refused", f"--preview cannot trace autograd (torch {torch.__version__}): the "
                                     "autograd engine needs a real CUDA device (a CPU-only build aborts, a CUDA build "
                                     "without a GPU fails); no input or parameter may require grad: capture a "
                                     "forward-only function (or wrap the call in torch.no_grad()) to preview its "
                                     "inference kernels")
        mode = opts.mode
        if preview:
            from kernelscope.capture.preview_patches import preview_backend

            compiled = torch.compile(fn, backend=preview_backend(mode, opts.dynamic), dynamic=opts.dynamic,
                                     fullgraph=opts.fullgraph)
        else:
            compiled = torch.compile(
                fn, mode=None if mode == "default" else mode, dynamic=opts.dynamic, fullgraph=opts.fullgraph,
            )
        events.emit("compile", f"torch.compile(mode={mode}) first call", graphs=0, kernels=0)
        t = time.time()
        try:
            for i, call in enumerate(calls):
                if i:
                    events.emit("compile", f"call {i + 1} of {len(calls)}", graphs=counter.graphs, kernels=counter.kernels)
                with grad_context(opts):
                    out = compiled(*call)
            if device == "cuda" and not preview and mode in torch_hooks.CUDAGRAPH_MODES:
                # CUDA graph trees warm up on a graph's first call and record on its second: two more
                # calls, so that the log says whether each graph was recorded (and replayed) or skipped.
                for _ in range(2):
                    with grad_context(opts):
                        out = compiled(*calls[-1])
                bundle.notes.append(f"mode {mode}: the last call was made 2 more times (CUDA graph trees warm up on "
                                    "the first call, record on the second, replay after), so that the capture "
                                    "knows whether each graph's CUDA graph was recorded or skipped")
            if device == "cuda" and not preview:
                torch.cuda.synchronize()
        except CaptureFailure:
            raise
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # sys.exit() in the function is its doing
            raise classify(exc, spec.file, options) from exc
        timings["compile_and_first_call"] = round(time.time() - t, 3)
        if opts.backward:
            events.emit("backward", "running backward", graphs=counter.graphs, kernels=counter.kernels)
            t = time.time()
            try:
                tensors = [o for o in flatten(out) if isinstance(o, torch.Tensor) and o.requires_grad]
                if not tensors:
                    raise CaptureFailure("args", "--backward: no output requires grad, nothing to differentiate")
                loss = sum(o.float().sum() for o in tensors)
                loss.backward()
                if device == "cuda" and not preview:
                    torch.cuda.synchronize()
            except CaptureFailure:
                raise
            except (Exception, SystemExit, KeyboardInterrupt) as exc:
                raise classify(exc, spec.file, options) from exc
            timings["backward"] = round(time.time() - t, 3)
    except CaptureFailure as exc:
        return exc
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # e.g. sys.exit() while importing the user's file
        return classify(exc, spec.file, options)
    return None


def _finish(spec: CaptureSpec, bundle, work, staging, events, counter, timings, failure, device) -> int:
    events.emit("collect", "collecting artifacts", graphs=counter.graphs, kernels=counter.kernels)
    t = time.time()
    sys.stdout.flush()
    sys.stderr.flush()
    _flush_trace_handlers()
    bundle.timings = timings
    write_bundle_from_work(work, staging, bundle, user_file=spec.file)
    timings["collect"] = round(time.time() - t, 3)
    if spec.options.passes:
        t = time.time()
        _store_passes(bundle, staging, events)
        timings["passes"] = round(time.time() - t, 3)
    if failure is not None and failure.kind in _NO_BUNDLE_KINDS and not bundle.graphs:
        events.emit("error", failure.message, kind=failure.kind)
        return EXIT_NO_BUNDLE
    if failure is not None:
        bundle.status = "failed"
        bundle.error = failure.message
        bundle.error_kind = failure.kind
        if failure.graph_break is not None and not bundle.graph_breaks:
            bundle.graph_breaks.append(failure.graph_break)
    if device != "cuda":
        bundle.notes.append(f"Triton stages absent: the capture ran on {device}, where Inductor emits C++ kernels")
    save_manifest(bundle, staging)
    if failure is not None:
        events.emit("error", failure.message, kind=failure.kind)
        return EXIT_FAILED
    events.emit("done", f"{plural(len(bundle.kernels), 'kernel')} in {plural(len(bundle.graphs), 'graph')}",
                graphs=len(bundle.graphs), kernels=len(bundle.kernels))
    return EXIT_OK


def _store_passes(bundle: Bundle, staging: Path, events: Events) -> None:
    """--passes: every MLIR/LLVM pass of each Triton variant, dumped by a same-version recompile in a
    child (keeps the pass dumps of parallel compile workers from interleaving in one stderr)."""
    from kernelscope.pipeline.passes import recompute_passes

    previous, bundle.root = bundle.root, str(staging)  # recompute_passes reads the staged files
    try:
        variants = [(k, v) for k in bundle.kernels for v in k.triton]
        for i, (k, v) in enumerate(variants, start=1):
            events.emit("passes", f"dumping passes of {k.name} ({i}/{len(variants)})")
            rel = str(Path(v.files.get("ttir", f"triton/{k.graph}/{k.name}/{v.cache_key}/x")).parent / "passes")
            try:
                recompute_passes(bundle, k, out_dir=staging / rel, variant=v)
            except Exception as exc:  # a kernel whose passes cannot be dumped keeps its stages
                bundle.notes.append(f"passes of {k.name} ({v.cache_key[:8]}) not dumped: {exc.__class__.__name__}: {exc}")
                continue
            shutil.rmtree(staging / rel / "compile", ignore_errors=True)  # stage files the bundle already has
            v.files["passes"] = rel
    finally:
        bundle.root = previous


def _flush_trace_handlers() -> None:
    for name in (torch_hooks.TRACE_LOGGER,):
        for h in logging.getLogger(name).handlers:
            try:
                h.flush()
            except Exception:
                pass
