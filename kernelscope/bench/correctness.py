"""Compiled against eager on fresh random inputs. Imports torch."""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelscope.bench.step import Step, call_guarded, make_inputs, tensors_of

# ---------------------------------------------------------------- correctness

TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-9), "float16": (1e-2, 1e-2), "bfloat16": (1.6e-2, 1e-2)}


def compare(eager: list[torch.Tensor], compiled: list[torch.Tensor]) -> dict[str, Any]:
    out: dict[str, Any] = {"tensors": len(eager), "max_abs_err": 0.0, "max_rel_err": 0.0, "nan_eager": 0,
                           "nan_compiled": 0, "ok": True, "problems": []}
    if len(eager) != len(compiled):
        out.update(ok=False, problems=[f"eager returned {len(eager)} tensors, compiled {len(compiled)}"])
        return out
    for i, (e, c) in enumerate(zip(eager, compiled)):
        if e.shape != c.shape or e.dtype != c.dtype:
            out["ok"] = False
            out["problems"].append(f"output {i}: eager {e.dtype} {list(e.shape)}, compiled {c.dtype} {list(c.shape)}")
            continue
        e64, c64 = e.detach().double().cpu(), c.detach().double().cpu()
        ne, nc = torch.isnan(e64), torch.isnan(c64)
        out["nan_eager"] += int(ne.sum())
        out["nan_compiled"] += int(nc.sum())
        if not torch.equal(ne, nc):
            out["ok"] = False
            out["problems"].append(f"output {i}: NaN where eager has none (or the reverse)")
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
                    out["problems"].append(f"output {i}: differs beyond rtol={rtol:g} atol={atol:g}")
            elif max_abs != 0:
                out["ok"] = False
                out["problems"].append(f"output {i}: integer results differ")
    out["max_abs_err"] = float(f"{out['max_abs_err']:.3g}")
    out["max_rel_err"] = float(f"{out['max_rel_err']:.3g}")
    out["rel_err_is"] = "max |compiled - eager| / max |eager|, per tensor"
    return out


def correctness(request: dict, module, eager: Step, compiled: Step) -> dict[str, Any]:
    seed = int(time.time() * 1000) % (1 << 31)
    torch.manual_seed(seed)
    inputs = make_inputs(request, module, request["device"])
    results = []
    for step in (eager, compiled):
        out = call_guarded(step, inputs, request)
        tensors = [t.detach().clone() for t in tensors_of(out)]
        if step.backward:
            tensors += [t.grad.detach().clone() for t in step.leaves(inputs) if t.grad is not None]
        results.append(tensors)
    verdict = compare(results[0], results[1])
    verdict["seed"] = seed
    verdict["compared"] = "outputs" + (" and gradients" if eager.backward else "") + ", fresh random inputs"
    return verdict
