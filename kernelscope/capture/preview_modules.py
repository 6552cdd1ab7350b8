"""Preview: the user's nn.Module built without a GPU, then placed on the faked CUDA device.

Part of the preview's quarantine (see capture/preview_patches.py). Checked against torch 2.13 (CPU
build) and torch 2.11 (CUDA build, GPU hidden), transformers 5.x Llama, BERT and GPT-2.

Why not build the module under the inputs' FakeTensorMode: a parameter made there is memoised by the
mode's converter (a weak reference to it), and ``Module._apply`` swaps FakeTensor parameters in
place (``torch.utils.swap_tensors``), which refuses a tensor with a weak reference: every
``.to(dtype)``, ``.half()`` or ``.to(device)`` in ``__init__`` failed with "_apply(): Couldn't swap
Embedding.weight". So the module is built on the ``meta`` device (public: ``torch.device`` as a
context manager), where those conversions are plain tensor ops, with any CUDA device the code names
read as meta (``.to("cuda")``, ``.cuda()``, ``device="cuda"`` factories); then every parameter,
buffer and tensor attribute becomes a FakeTensor of the same size, strides and dtype on the faked
device. The values were never real either way (FakeTensors carry none), and Dynamo lifts parameters
and buffers as graph inputs, so Inductor emits the same code as for the real module.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cuda"
    if isinstance(value, str):
        return value == "cuda" or (value.startswith("cuda:") and value[5:].isdigit())
    return False


def _as_meta(value: Any) -> Any:
    return torch.device("meta") if _is_cuda(value) else value


class _CudaReadAsMeta(TorchFunctionMode):
    """Inside: a CUDA device named by the module's own code (``.to("cuda")``, ``.cuda()``, a factory's
    ``device=``) is the meta device, so that ``__init__`` runs as written on a machine without one."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cuda:
            return args[0]
        args = tuple(_as_meta(a) for a in args)
        kwargs = {k: _as_meta(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def build_module(cls: type) -> torch.nn.Module:
    """``cls()`` with its tensors on the meta device (see the module docstring)."""
    with torch.device("meta"), _CudaReadAsMeta():
        return cls()


def to_fake_device(module: torch.nn.Module, device: str) -> torch.nn.Module:
    """Every parameter, buffer and tensor attribute of ``module`` (built by ``build_module``) replaced
    by an empty tensor of the same size, strides and dtype on ``device``; called under the inputs'
    FakeTensorMode, so those are FakeTensors. A tied weight (an embedding reused as the head) stays
    tied; a parameter keeps its requires_grad."""
    target = torch.device(device)
    moved: dict[int, torch.Tensor] = {}  # by id

    def move(t):
        if not isinstance(t, torch.Tensor) or t.device.type == target.type:
            return t
        if id(t) not in moved:
            new = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=target)
            if isinstance(t, torch.nn.Parameter):
                new = torch.nn.Parameter(new, requires_grad=t.requires_grad)
            moved[id(t)] = new
        return moved[id(t)]

    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for name, t in list(table.items()):
                table[name] = move(t)
        # A tensor kept as a plain attribute (self.mask = torch.tril(...)) is used by forward like a buffer.
        for name, value in list(vars(m).items()):
            if isinstance(value, torch.Tensor) and not name.startswith("_"):
                setattr(m, name, move(value))
    return module
