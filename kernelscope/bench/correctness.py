"""Compiled against eager on fresh random inputs. Imports torch."""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelscope.bench.step import Step, call_guarded, make_inputs, tensors_of

# ---------------------------------------------------------------- correctness

TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-9), "float16": (1e-2, 1e-2), "bfloat16": (1.6e-2, 1e-2)}


def compare(eager: list[torch.Tensor], compiled: list[torch.Tensor], labels: list[str] | None = None) -> dict[str, Any]:
    """Compiled against eager, tensor by tensor; ``labels`` name them in the problems ("output 0")."""
    out: dict[str, Any] = {"tensors": len(eager), "max_abs_err": 0.0, "max_rel_err": 0.0, "nan_eager": 0,
                           "nan_compiled": 0, "ok": True, "problems": []}
    if len(eager) != len(compiled):
        out.update(ok=False, problems=[f"eager returned {len(eager)} tensors, compiled {len(compiled)}"])
        return out
    for i, (e, c) in enumerate(zip(eager, compiled)):
        what = labels[i] if labels and i < len(labels) else f"output {i}"
        if e.shape != c.shape or e.dtype != c.dtype:
            out["ok"] = False
            out["problems"].append(f"{what}: eager {e.dtype} {list(e.shape)}, compiled {c.dtype} {list(c.shape)}")
            continue
        e64, c64 = e.detach().double().cpu(), c.detach().double().cpu()
        ne, nc = torch.isnan(e64), torch.isnan(c64)
        out["nan_eager"] += int(ne.sum())
        out["nan_compiled"] += int(nc.sum())
        if not torch.equal(ne, nc):
            out["ok"] = False
            out["problems"].append(f"{what}: NaN where eager has none (or the reverse)")
        finite = ~(ne | nc)
        if finite.any():
            diff = (e64[finite] - c64[finite]).abs()
            max_abs = float(diff.max())
            top = float(e64[finite].abs().max())
            out["max_abs_err"] = max(out["max_abs_err"], max_abs)
            out["max_rel_err"] = max(out["max_rel_err"], max_abs / top if top > 0 else 0.0)
            if e.is_floating_point():
                rtol, atol = TOLERANCES.get(str(e.dtype).replace("torch.", ""), (1e-3, 1e-4))
                if not torch.allclose(c64[finite], e64[finite], rtol=rtol, atol=atol):
                    out["ok"] = False
                    out["problems"].append(f"{what}: differs beyond rtol={rtol:g} atol={atol:g}")
            elif max_abs != 0:
                out["ok"] = False
                out["problems"].append(f"{what}: integer results differ")
    out["max_abs_err"] = float(f"{out['max_abs_err']:.3g}")
    out["max_rel_err"] = float(f"{out['max_rel_err']:.3g}")
    out["rel_err_is"] = "max |compiled - eager| / max |eager|, per tensor"
    return out


def correctness(request: dict, module, eager: Step, compiled: Step) -> dict[str, Any]:
    seed = int(time.time() * 1000) % (1 << 31)
    torch.manual_seed(seed)
    inputs = make_inputs(request, module, request["device"])
    results, labels, written = [], [], []
    for step in (eager, compiled):
        mine = _copy(inputs)  # each side gets its own copy: a function may write its inputs in place
        before = [t.detach().clone() for t in tensors_of(mine)]
        out = call_guarded(step, mine, request)
        tensors = [t.detach().clone() for t in tensors_of(out)]
        labels = [f"output {i}" for i in range(len(tensors))]
        if step.backward:
            grads = [t.grad.detach().clone() for t in step.leaves(mine) if t.grad is not None]
            labels += [f"gradient {i}" for i in range(len(grads))]
            tensors += grads
        if step is eager:
            written = [i for i, (b, a) in enumerate(zip(before, tensors_of(mine)))
                       if b.shape == a.shape and not torch.equal(b, a.detach())]
        after = tensors_of(mine)
        tensors += [after[i].detach().clone() for i in written]
        labels += [f"input {i} as written in place" for i in written]
        results.append(tensors)
    verdict = compare(results[0], results[1], labels)
    verdict["seed"] = seed
    verdict["compared"] = ("outputs" + (" and gradients" if eager.backward else "")
                           + (f", {len(written)} input{'s' if len(written) != 1 else ''} written in place" if written else "")
                           + ", fresh random inputs")
    return verdict


def _copy(value: Any) -> Any:
    """``value`` with every tensor in it cloned (leaves stay leaves that require grad as before)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        items = [_copy(v) for v in value]
        return type(value)(items) if isinstance(value, list) or type(value) is tuple else type(value)(*items)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value
