"""One Triton kernel rerun alone from the bundle's kernel module: its recorded config and a changed
one, timed with triton.testing.do_bench. Imports torch and triton."""

from __future__ import annotations

import ast
import copy
import importlib.util
from pathlib import Path
from typing import Any

import torch

from kernelscope.bench import torch_private
from kernelscope.bench.step import BenchFailure
from kernelscope.capture.inputs import TORCH_DTYPES

# ---------------------------------------------------------------- one kernel

def _kernel_args(call_text: str, tensors: dict[str, torch.Tensor]) -> list[Any]:
    try:
        call = ast.parse(call_text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BenchFailure("kernel", f"cannot read the kernel's recorded call {call_text!r}") from exc
    if not isinstance(call, ast.Call):
        raise BenchFailure("kernel", f"the kernel's recorded call is not a call: {call_text!r}")
    args: list[Any] = []
    for node in call.args:
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "reinterpret_tensor" and node.args \
                and isinstance(node.args[0], ast.Name):
            name = node.args[0].id
        if name is not None:
            if name not in tensors:
                raise BenchFailure("kernel", f"argument {name} of the recorded call has no recorded shape; "
                                   "cannot rerun this kernel alone")
            args.append(tensors[name])
            continue
        try:
            args.append(ast.literal_eval(node))
        except ValueError as exc:
            raise BenchFailure("kernel", f"argument {ast.unparse(node)!r} is symbolic (dynamic shapes); "
                               "rerun needs a capture with static shapes") from exc
    return args


def _make_buffers(buffers: list[dict], device: str) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for b in buffers:
        if b["name"] in out:
            continue
        if any(not isinstance(d, int) for d in b["shape"] + b["stride"]) or b["dtype"] not in TORCH_DTYPES:
            raise BenchFailure("kernel", f"buffer {b['name']} has a symbolic shape or unknown dtype "
                               f"({b['dtype']}{b['shape']}); cannot rerun this kernel alone")
        dtype = TORCH_DTYPES[b["dtype"]]
        stride = b["stride"] or None
        t = torch.empty_strided(b["shape"], stride, dtype=dtype, device=device) if stride else \
            torch.empty(b["shape"], dtype=dtype, device=device)
        if dtype.is_floating_point:
            t.normal_()
        elif dtype == torch.bool:
            t.copy_(torch.rand(t.shape, device=device) > 0.5)
        else:
            t.zero_()  # integer buffers are often indices: zeros stay in range
        out[b["name"]] = t
    return out


def _load_kernel(source: Path, name: str, tag: str):
    spec = importlib.util.spec_from_file_location(f"kernelscope_kernel_{tag}_{name}", source)
    if spec is None or spec.loader is None:
        raise BenchFailure("kernel", f"{source}: cannot load the kernel module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise BenchFailure("kernel", f"loading {name}'s module raised {exc.__class__.__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    kernel = getattr(module, name, None)
    if not torch_private.is_inductor_kernel(kernel):
        raise BenchFailure("kernel", f"{name}'s module does not define an Inductor kernel named {name}")
    return kernel


def kernel_section(request: dict, events) -> dict[str, Any]:
    spec = request["kernel"]
    if request["device"] != "cuda":
        raise BenchFailure("device", f"{spec['name']}: rerunning a Triton kernel alone needs a CUDA GPU; "
                           "none here (the CPU bench times the whole function)")
    import triton
    from triton.testing import do_bench

    work = Path(request["work"])
    source = work / f"{spec['name']}.py"  # a private copy: the autotuner writes its cache beside its file
    source.write_text(spec["source_text"], encoding="utf-8")
    tensors = _make_buffers(spec["buffers"], "cuda")
    args = _kernel_args(spec["call_text"], tensors)
    writes = [b["name"] for b in spec["buffers"] if b["role"] in ("write", "readwrite")]
    stream = torch.cuda.current_stream().cuda_stream
    inplace = [b["name"] for b in spec["buffers"] if b["role"] == "readwrite"]
    saved = {n: tensors[n].clone() for n in inplace}

    def restore() -> None:
        for n, t in saved.items():
            tensors[n].copy_(t)

    results = []
    reference: dict[str, torch.Tensor] = {}
    chosen = None
    for tag in ("recorded", "changed"):
        kernel = _load_kernel(source, spec["name"], tag)
        if tag == "changed":
            config = copy.deepcopy(chosen)
            changes = dict(spec.get("changes") or {})
            for key in ("num_warps", "num_stages"):
                if key in changes:
                    setattr(config, key, int(changes.pop(key)))
            unknown = [k for k in changes if k not in config.kwargs]
            if unknown:
                raise BenchFailure("kernel", f"{spec['name']} has no block size {', '.join(unknown)}; its config has "
                                   f"{', '.join(config.kwargs) or 'no block sizes'}, num_warps, num_stages")
            config.kwargs.update({k: int(v) for k, v in changes.items()})
            torch_private.use_only_config(kernel, config)
        events.emit("kernel", f"{spec['name']}: {tag} config")
        restore()
        try:
            torch_private.run_kernel(kernel, args, stream)
            torch.cuda.synchronize()
        except Exception as exc:
            raise BenchFailure("kernel", f"{spec['name']} ({tag} config) failed: {exc.__class__.__name__}: "
                               f"{(str(exc).splitlines() or [''])[0][:300]}") from exc
        launcher = torch_private.first_launcher(kernel)
        if tag == "recorded":
            chosen = launcher.config
            reference = {n: tensors[n].clone() for n in writes}
            same = None
        else:
            same = all(torch.allclose(tensors[n].double(), reference[n].double(), rtol=1e-5, atol=1e-6, equal_nan=True)
                       if tensors[n].is_floating_point() else torch.equal(tensors[n], reference[n]) for n in writes)

        q = do_bench(torch_private.launch_fn(kernel, args, stream), warmup=25, rep=int(request["settings"].get("kernel_rep_ms", 200)),
                     quantiles=[0.5, 0.1, 0.9])
        results.append({"config": tag, **torch_private.config_dict(launcher.config), "median_us": round(q[0] * 1000, 3),
                        "p10_us": round(q[1] * 1000, 3), "p90_us": round(q[2] * 1000, 3),
                        **torch_private.launcher_resources(launcher), "same_result": same})
    restore()
    return {"name": spec["name"], "kernel_id": spec.get("kernel_id", ""), "runs": results,
            "timer": "triton.testing.do_bench (L2 cleared before each run), median and p10/p90",
            "data": "random normal floats, zero integers, random bools; recorded shapes and strides",
            "triton": triton.__version__}
