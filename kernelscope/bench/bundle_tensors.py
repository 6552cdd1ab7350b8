"""The inputs of a bench of a bundle alone, as tensors, inside the bench child (imports torch): every
recorded input checked before anything is allocated (a size or stride no tensor has, more bytes than the
device has free, a layout its FX graph does not declare), then made of its recorded shape, stride and
dtype (random floats; an integer input random in the range bench/bundle_inputs.py found, else zeros),
and copied for each call. bench/from_bundle.py runs the graphs on them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import torch

from kernelscope.bench.printed_fx import fx_source
from kernelscope.bench.step import BenchFailure
from kernelscope.ingest.dtypes import split_dims

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
          "bool": torch.bool, "complex64": torch.complex64, "complex128": torch.complex128}
for _name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


def storage_elements(shape: list[int], stride: list[int]) -> int:
    """Elements of the storage a tensor of this size and stride reads (0 when it is empty)."""
    return 1 + sum((d - 1) * s for d, s in zip(shape, stride)) if all(d > 0 for d in shape) else 0


def check_inputs(plans: list[dict[str, Any]], device: str) -> int:
    """BenchFailure (one line) for a recorded input no tensor can have (a negative size or stride, a size
    that is not a whole number) or more bytes than the device has free; else the bytes of one input set.
    Checked before anything is allocated: a get_args() asking for 4 TB went straight to the allocator."""
    total = 0
    for plan in plans:
        for spec in plan["inputs"]:
            if spec["kind"] != "tensor":
                continue
            where = f"{plan['graph']}: input {spec['name']}"
            shape, stride = spec.get("shape"), spec.get("stride")
            if not (isinstance(shape, list) and isinstance(stride, list) and len(shape) == len(stride)
                    and all(type(v) is int for v in shape + stride)):
                raise BenchFailure("args", f"{where}: get_args() gives no whole-number size and stride of one "
                                   "length; the bundle's output code is damaged")
            if any(d < 0 for d in shape):
                raise BenchFailure("args", f"{where}: get_args() asks for a negative size {shape}; the bundle's "
                                   "output code is damaged")
            if any(st < 0 for st in stride):
                raise BenchFailure("args", f"{where}: get_args() asks for a negative stride {stride}, which no "
                                   "tensor input has; the bundle's output code is damaged")
            dtype = DTYPES.get(spec.get("dtype"))
            if dtype is None:
                raise BenchFailure("args", f"{where}: cannot make a tensor of dtype {spec.get('dtype')}")
            total += storage_elements(shape, stride) * dtype.itemsize
    free = free_bytes(device)
    # One set of inputs and the copy each call gets: past what is free the allocator fails (or the OOM killer).
    if free is not None and 2 * total > free:
        raise BenchFailure("args", f"the bundle's inputs need {_size(total)} (and a copy of them), more than the "
                           f"{_size(free)} free on {device}; bench it on a machine with more memory")
    return total


def free_bytes(device: str) -> int | None:
    """Bytes free on the device: CUDA's free memory, else the host's MemAvailable, or less under an address
    space limit (ulimit -v) what is left of it (None when unknown)."""
    if device.startswith("cuda"):
        try:
            return int(torch.cuda.mem_get_info()[0])
        except Exception:
            return None
    free = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            free = next((int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:")), None)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
        if cap != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as fh:
                used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            free = max(0, cap - used) if free is None else min(free, max(0, cap - used))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return free


def _size(n: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def check_fx_agrees(plan: dict[str, Any]) -> None:
    """BenchFailure when get_args() makes an input of another size or stride than the FX graph declares for
    it (a zero stride where the graph reads a dense tensor): the two sides would run different programs."""
    declared = fx_placeholder_layouts(Path(plan["eager_fx"]).read_text(encoding="utf-8", errors="replace"))
    if len(declared) != len(plan["inputs"]):  # the planner matched them one to one; nothing to compare else
        return
    for spec, layout in zip(plan["inputs"], declared):
        if spec["kind"] != "tensor" or layout is None:
            continue
        shape, stride = layout
        for what, mine, theirs in (("size", spec["shape"], shape), ("stride", spec["stride"], stride)):
            if theirs is None or len(theirs) != len(mine):
                continue
            if any(isinstance(t, int) and t != m for m, t in zip(mine, theirs)):
                raise BenchFailure("args", f"{plan['graph']}: input {spec['name']}: get_args() makes {what} {mine}, but "
                                   f"the FX graph declares {list(theirs)}; the bundle's output code and FX graph "
                                   "disagree (damaged or edited)")


_LAYOUT = re.compile(r"^[a-z0-9]+\[([^\]]*)\]\[([^\]]*)\]")


def fx_placeholder_layouts(text: str) -> list[tuple[list, list] | None]:
    """Per placeholder in order, (size, stride) from a printed graph's annotation (``"f32[8, 3][3, 1]cpu"``;
    a symbolic dimension is its name), None where it has none."""
    import ast

    try:
        tree = ast.parse(fx_source(text))
    except (SyntaxError, ValueError):
        return {}
    forward = next((f for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
                    if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    out: list[tuple[list, list] | None] = []
    for a in forward.args.args[1:] if forward is not None else []:
        ann = a.annotation
        m = _LAYOUT.match(ann.value.strip()) if isinstance(ann, ast.Constant) and isinstance(ann.value, str) else None
        out.append((split_dims(m.group(1)), split_dims(m.group(2))) if m else None)
    return out


def make_input(spec: dict[str, Any], device: str, double: bool = False) -> Any:
    kind = spec["kind"]
    if kind in ("int", "float", "bool"):
        return spec.get("value")
    if kind == "none":
        return None
    dtype = DTYPES.get(spec["dtype"])
    if dtype is None:
        raise BenchFailure("args", f"input {spec['name']}: cannot make a tensor of dtype {spec['dtype']}")
    shape, stride = spec["shape"], spec["stride"]
    needed = storage_elements(shape, stride)
    if spec.get("high") is not None:
        flat = torch.randint(int(spec["low"]), int(spec["high"]), (needed,), device=device)
        flat = flat.to(dtype)
    elif dtype.is_floating_point or dtype.is_complex:
        make = torch.float32 if dtype.itemsize == 1 else dtype
        flat = torch.randn(needed, dtype=make, device=device)
        if len(shape) >= 2 and shape[-1] > 1:
            # A weight's scale (1/sqrt(fan-in), as nn.Linear's init): unit-variance weights grow a transformer's
            # activations ~sqrt(width) per matmul, to 1e18 and past bf16's range within a few layers (an H100
            # Llama training step: NaN on both sides and a false MISMATCH); an activation is only made smaller.
            flat = flat * (1.0 / shape[-1] ** 0.5)
        flat = flat.to(dtype)
        if double:
            flat = flat.double()
    else:
        flat = torch.zeros(needed, dtype=dtype, device=device)
    return torch.as_strided(flat, shape, stride)


def make_set(graphs: list, device: str) -> list[list[Any]]:
    """One input set: per graph, its inputs (None where a forward graph's output goes in at call time)."""
    return [[None if s["kind"] == "saved" else make_input(s, device) for s in g.inputs] for g in graphs]


def graph_args(g, args: list[Any], outs: dict[str, list[Any]]) -> list[Any]:
    """A graph's arguments for one call: its own inputs, a saved activation taken from what its forward
    returned in this call (``outs``: graph id -> outputs)."""
    return [outs[s["saved_from"]["graph"]][s["saved_from"]["output"]] if s["kind"] == "saved" else a
            for s, a in zip(g.inputs, args)]


def copy_set(value: Any, float_as: torch.dtype | None = None) -> Any:
    """A copy of an input set for one call (the output code may write its inputs, or free them); with
    ``float_as``, floating tensors in that dtype (the reference run)."""
    if isinstance(value, torch.Tensor):
        dtype = float_as if float_as is not None and value.is_floating_point() else value.dtype
        return copy_strided(value.detach(), dtype)
    if isinstance(value, list):
        return [copy_set(v, float_as) for v in value]
    return value


def copy_strided(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` copied with its own size, stride and offset: ``clone()`` makes an expanded or overlapping
    input (stride 0) contiguous, and the output code's assert_size_stride then refuses it."""
    if t.is_contiguous() and t.storage_offset() == 0:
        return t.to(dtype, copy=True)
    n = t.storage_offset() + storage_elements(list(t.shape), list(t.stride()))
    flat = torch.as_strided(t, (n,), (1,), 0).to(dtype, copy=True)
    return torch.as_strided(flat, t.shape, t.stride(), t.storage_offset())


def set_bytes(inputs: list[list[Any]]) -> int:
    return sum(t.numel() * t.element_size() for args in inputs for t in args if isinstance(t, torch.Tensor))
