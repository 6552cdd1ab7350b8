"""One capture inside the child: load the target, make inputs, torch.compile, run, collect.

Imports torch (as do the preview's patches and bench/measure.py). Public hooks only: TORCH_TRACE,
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
from kernelscope.capture.spec import EXIT_FAILED, EXIT_NO_BUNDLE, EXIT_OK, CaptureOptions, CaptureSpec, Events
from kernelscope.units import plural

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}


# Failures before anything was compiled: a bundle would hold nothing, so none is written.
_NO_BUNDLE_KINDS = {"no_gpu", "target", "args", "preview_refused"}


class CaptureFailure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


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
                             f"{_user_frame(exc, path)}; guard it with `if __name__ == \"__main__\":`") from exc
    except Exception as exc:
        where = _user_frame(exc, path)
        raise CaptureFailure("target", f"importing {Path(path).name} raised {exc.__class__.__name__}: {exc}{where}") from exc
    return module


def load_target(target: dict, device: str):
    """(module, callable): the user's file imported, the function or an nn.Module built on ``device``."""
    module = load_module(target["file"])
    fn = getattr(module, target["name"], None)
    if fn is None:
        raise CaptureFailure("target", f"{target['file']}: no attribute {target['name']!r} after import")
    if isinstance(fn, type):
        if not issubclass(fn, torch.nn.Module):
            raise CaptureFailure("target", f"{target['name']} is a class but not a torch.nn.Module")
        try:
            fn = fn().to(device)
        except TypeError as exc:
            raise CaptureFailure("target", f"{target['name']}() needs arguments ({exc}); kernelscope constructs "
                                 "modules without arguments: give them defaults") from exc
    return module, fn


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


def grad_context(options: CaptureOptions | dict):
    """The context the compiled calls run in: torch.inference_mode(), torch.no_grad() or grad on.
    ``options``: the capture's typed options, or the bench request's options dict."""
    def get(key: str) -> bool:
        return bool(options.get(key) if isinstance(options, dict) else getattr(options, key, False))

    if get("inference_mode"):
        return torch.inference_mode()
    if get("no_grad"):
        return torch.no_grad()
    return contextlib.nullcontext()


def _user_frame(exc: BaseException, path: str) -> str:
    """" (at file.py:LINE)" for the innermost frame in the user's file, from the traceback or, for
    Dynamo's errors (raised outside the user's frames), from the "from user code" text."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    if frames:
        return f" (at {Path(path).name}:{frames[-1].lineno})"
    lines = re.findall(r'File "([^"]+)", line (\d+)', str(exc))
    mine = [int(n) for f, n in lines if f == path]
    return f" (at {Path(path).name}:{mine[-1]})" if mine else ""


def make_calls(spec: CaptureSpec, module, device: str) -> list[tuple]:
    """The argument tuples to call the compiled function with: --args (';' separates calls) or the
    inputs factory next to the function."""
    if spec.calls:
        return [tensors(call, device) for call in spec.calls]
    return [make_inputs({"target": spec.target}, module, device)]


def _fmt_size(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _spec_text(spec: dict) -> str:
    short = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
             "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}
    return f"{short.get(spec['dtype'], spec['dtype'])}[{', '.join(map(str, spec['shape']))}]"


def device_memory(device: str) -> int | None:
    """Bytes of memory the device has in all (None when unknown)."""
    try:
        if device == "cuda":
            return int(torch.cuda.mem_get_info()[1])
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, RuntimeError, AttributeError):
        return None


def tensors(call: list[dict], device: str) -> tuple:
    """Random tensors (and plain scalars) for one call, as the --args specs describe them. Inputs
    larger than the device's memory, or that fail to allocate, are the inputs' fault (a one-line
    "args" failure naming their size), never blamed on the function, which has not run yet."""
    specs = [spec for spec in call if "value" not in spec]
    need = 0
    for spec in specs:
        numel = 1
        for d in spec["shape"]:
            numel *= int(d)
        need += numel * TORCH_DTYPES[spec["dtype"]].itemsize
    described = ", ".join(_spec_text(spec) for spec in specs)
    have = device_memory(device)
    if have is not None and need > have:
        raise CaptureFailure("args", f"inputs need {_fmt_size(need)}: {described}; the {device} has "
                             f"{_fmt_size(have)} in all: pass smaller --args shapes")
    try:
        return _make_tensors(call, device)
    except (RuntimeError, MemoryError, OverflowError, ValueError) as exc:
        first = (str(exc).strip().split("\n")[0] or exc.__class__.__name__)[:200]
        raise CaptureFailure("args", f"inputs could not be allocated on {device} (they need {_fmt_size(need)}: "
                             f"{described}): {first}; pass smaller --args shapes") from exc


def _make_tensors(call: list[dict], device: str) -> tuple:
    values = []
    for spec in call:
        if "value" in spec:
            values.append(spec["value"])
            continue
        dtype = TORCH_DTYPES[spec["dtype"]]
        shape = spec["shape"]
        if dtype.is_floating_point:
            t = torch.randn(shape, device=device, dtype=dtype)
        elif dtype == torch.bool:
            t = torch.rand(shape, device=device) > 0.5
        else:  # integers: the spec's range, [0, 100) by default (token ids, indices are non-negative)
            t = torch.randint(int(spec.get("low", 0)), int(spec.get("high", 100)), shape, device=device, dtype=dtype)
        if spec.get("requires_grad"):
            t.requires_grad_(True)
        values.append(t)
    return tuple(values)


def make_inputs(request: dict, module, device: str) -> tuple:
    """The inputs factory's call; REQUEST holds the target (as a CaptureSpec's, or a bench request's)."""
    target = request["target"]
    factory = getattr(module, f"{target['name']}_inputs", None) or getattr(module, "example_inputs", None)
    if factory is None:
        raise CaptureFailure(
            "args", f"{target['name']} needs inputs: pass --args \"f32[1024], ...\" or define "
            f"{target['name']}_inputs(device) next to it"
        )
    try:
        values = factory(device)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        raise CaptureFailure("target", f"{factory.__name__}({device!r}) raised {exc.__class__.__name__}: {exc}"
                             f"{_user_frame(exc, target['file'])}") from exc
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


def _params(fn) -> list[str]:
    """The positional parameter names, so a guard's or a symbol's source (L['x']) names an input."""
    import inspect

    try:
        sig = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds and p.name != "self"]


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        short = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
                 torch.int64: "i64", torch.int32: "i32", torch.bool: "bool"}.get(value.dtype, str(value.dtype))
        return f"{short}[{', '.join(map(str, value.shape))}]" + (" grad" if value.requires_grad else "")
    return repr(value)


def classify(exc: BaseException, user_file: str, options: dict) -> CaptureFailure:
    """One line that says what went wrong, for the errors a user will make."""
    name = exc.__class__.__name__
    if isinstance(exc, SystemExit):
        return CaptureFailure("user", f"your function called sys.exit({exc.code!r}){_user_frame(exc, user_file)}; "
                              "kernelscope needs it to return")
    if isinstance(exc, KeyboardInterrupt):
        return CaptureFailure("user", f"your function raised KeyboardInterrupt{_user_frame(exc, user_file)}")
    text = str(exc).strip()
    first = text.split("\n")[0].strip() if text else name
    lowered = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in lowered \
            or "can't allocate memory" in lowered or "cannot allocate memory" in lowered:
        return CaptureFailure("oom", f"out of memory on {options.get('device')}: {first[:200]}; try smaller --args shapes")
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 8:
        chain.append(chain[-1].__cause__)
    if torch_hooks.is_graph_break(exc) and options.get("fullgraph"):
        return CaptureFailure("graph_break", f"graph break under --fullgraph: {_graph_break_line(text)}"
                              f"{_user_frame(exc, user_file)}; drop --fullgraph to let Dynamo split the graph")
    if torch_hooks.from_inductor(exc):
        inner = chain[-1]
        inner_text = str(inner).strip().split("\n")[0] or inner.__class__.__name__
        return CaptureFailure("compile", f"torch.compile failed in Inductor: {inner.__class__.__name__}: {inner_text[:300]}")
    if torch_hooks.from_dynamo(exc):
        return CaptureFailure("compile", f"torch.compile failed in Dynamo: {name}: {first[:300]}{_user_frame(exc, user_file)}")
    if "CUDA error" in text or "cudaError" in text or name == "AcceleratorError":
        return CaptureFailure("cuda", f"CUDA error: {first[:300]}")
    return CaptureFailure("user", f"your function raised {name}: {first[:300]}{_user_frame(exc, user_file)}")


def _graph_break_line(text: str) -> str:
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("Explanation:"):
            return line[len("Explanation:"):].strip()
    return text.split("\n")[0].strip()


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
    bundle = Bundle(target=dict(spec.target), options=options)
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
    if failure is not None and failure.kind not in ("compile", "cuda", "internal", "user"):
        return failure
    message = failure.message if failure is not None else None
    cause = str(failure.__cause__ or "") if failure is not None else ""
    if "from the 'CUDA' backend" in cause or "compiled without CUDA" in cause or "not linked with support for cuda" in cause:
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
        with inputs_mode:
            module, fn = load_target(target, device)
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
        if preview and options["grad_mode"] == "grad" and torch.is_grad_enabled():
            params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in [*inputs, *params]):
                raise CaptureFailure("preview_refused", f"--preview cannot trace autograd on torch {torch.__version__} without "
                                     "CUDA (its autograd engine needs a CUDA device guard, and aborts): no input or "
                                     "parameter may require grad; capture a forward-only function (or wrap the call "
                                     "in torch.no_grad()) to preview its inference kernels")
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


def flatten(value: Any):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from flatten(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from flatten(v)
    else:
        yield value
