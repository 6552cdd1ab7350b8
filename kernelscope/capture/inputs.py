"""The inputs a capture (and the bench) calls the function with: random tensors from --args specs,
or the inputs factory next to the function; and how an input is described. Imports torch."""

from __future__ import annotations

import os
from typing import Any

import torch

from kernelscope.capture.failures import CaptureFailure, user_frame
from kernelscope.capture.spec import CaptureSpec

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}


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
                             f"{user_frame(exc, target['file'])}") from exc
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        short = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
                 torch.int64: "i64", torch.int32: "i32", torch.bool: "bool"}.get(value.dtype, str(value.dtype))
        return f"{short}[{', '.join(map(str, value.shape))}]" + (" grad" if value.requires_grad else "")
    return repr(value)


def flatten(value: Any):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from flatten(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from flatten(v)
    else:
        yield value
