"""Compiled against eager, judged against a float64 run of the same call. Imports torch.

The verdict follows PyTorch's own accuracy check for compiled models (``torch._dynamo.utils.same``
with ``fp64_ref``, as its benchmark harness runs it): a tensor passes when compiled and eager agree
within a small tolerance, or when compiled's error against the float64 reference (root mean square)
is within a multiple of eager's own error against it (2x in float32, 3x in float16/bfloat16 and for
small tensors) plus a tenth of the tolerance. Reordered floating point in a fused kernel is the
same kind of noise eager has, so it passes; a wrong result is far outside it, so it fails.

Where no float64 run is possible (memory, an op without float64, a function whose outputs do not
become float64), the fallback is named in the verdict: cosine similarity >= 0.99 with norms within
1% for large tensors (PyTorch's ``--cosine`` rule, plus a norm check so a scaled result fails), else
allclose at the dtype's tolerances.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Any

import torch

from kernelscope.bench.step import Step, call_guarded, make_inputs, tensors_of
from kernelscope.capture import session

# ---------------------------------------------------------------- the rule

# The tolerance of the first allclose and of the rmse floor (tol / 10), by dtype: PyTorch's harness
# uses 1e-4 for float32 inference and 1e-3 for half precision.
TOLERANCES = {"float32": 1e-4, "float64": 1e-7, "float16": 1e-3, "bfloat16": 1e-3}
# The fallback's allclose (no float64 reference): rtol, atol by dtype.
FALLBACK_TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-9), "float16": (1e-2, 1e-2),
                       "bfloat16": (1.6e-2, 1e-2)}
COSINE_MIN = 0.99
COSINE_NUMEL = 1000  # from this many elements the fallback judges by cosine similarity
NORM_SLACK = 0.01
RULE = ("compiled's rmse vs {ref} <= {m:g}x eager's + {floor:g} (PyTorch's fp64_ref rule, "
        "torch._dynamo.utils.same)")


def multiplier(dtype: torch.dtype, numel: int) -> float:
    """How much larger than eager's error compiled's may be (torch._dynamo.utils.same's choice)."""
    if dtype in (torch.float16, torch.bfloat16) or numel < 1000:
        return 3.0  # half precision, and small tensors where noise dominates the rmse
    return 2.0


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a - b) ** 2))) if a.numel() else 0.0


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max()) if a.numel() else 0.0


def _judge_float(what: str, e64: torch.Tensor, c64: torch.Tensor, r64: torch.Tensor | None,
                 dtype: torch.dtype, ref: str = "float64") -> dict[str, Any]:
    """One floating tensor's verdict: {"ok", "rule", "problem", errors} (finite elements only)."""
    tol = TOLERANCES.get(_dtype_name(dtype), 1e-4)
    row: dict[str, Any] = {"what": what, "dtype": _dtype_name(dtype), "numel": e64.numel(), "ok": True,
                           "problem": ""}
    if r64 is not None:
        row["eager_rmse"] = _rmse(e64, r64)
        row["compiled_rmse"] = _rmse(c64, r64)
        row["eager_max_abs"] = _max_abs(e64, r64)
        row["compiled_max_abs"] = _max_abs(c64, r64)
        # The reference's own size: an rmse of 1.4 says little until one knows the output's values run to ~40.
        row["reference_rms"] = float(torch.sqrt(torch.mean(r64 ** 2))) if r64.numel() else 0.0
        m = multiplier(dtype, e64.numel())
        row["multiplier"] = m
        row["rule"] = RULE.format(ref=ref, m=m, floor=tol / 10)
        if torch.allclose(c64, e64, rtol=tol, atol=tol):
            row["rule"] = f"allclose to eager within {tol:g}"
            row["allclose"] = tol  # passed before the float64 rule was needed; its errors are still shown
            return row
        if not row["compiled_rmse"] <= m * row["eager_rmse"] + tol / 10:
            row["ok"] = False
            row["problem"] = (f"{what}: compiled's rmse vs {ref} {row['compiled_rmse']:.3g} is more than "
                              f"{m:g}x eager's {row['eager_rmse']:.3g} + {tol / 10:g}")
        return row
    if e64.numel() >= COSINE_NUMEL and dtype != torch.float64:
        cos = float(torch.nn.functional.cosine_similarity(e64.flatten(), c64.flatten(), dim=0, eps=1e-6))
        ne, nc = float(e64.norm()), float(c64.norm())
        norm_diff = abs(nc - ne) / ne if ne > 0 else (0.0 if nc == 0 else math.inf)
        row.update(cosine=cos, norm_diff=norm_diff,
                   rule=f"cosine similarity to eager >= {COSINE_MIN:g} and norms within {NORM_SLACK:.0%}")
        if torch.allclose(c64, e64, rtol=tol, atol=tol):
            return row
        if cos < COSINE_MIN or norm_diff > NORM_SLACK:
            row["ok"] = False
            row["problem"] = (f"{what}: cosine similarity to eager {cos:.4f} (needs >= {COSINE_MIN:g}), "
                              f"norms differ by {norm_diff:.2%} (needs <= {NORM_SLACK:.0%})")
        return row
    rtol, atol = FALLBACK_TOLERANCES.get(_dtype_name(dtype), (1e-3, 1e-4))
    row["rule"] = f"allclose to eager, rtol={rtol:g} atol={atol:g}"
    if not torch.allclose(c64, e64, rtol=rtol, atol=atol):
        row["ok"] = False
        row["problem"] = f"{what}: differs beyond rtol={rtol:g} atol={atol:g}"
    return row


def _finer(reference: torch.dtype, dtype: torch.dtype) -> bool:
    """Whether a reference of this dtype is more precise than the tensor judged (float64; float32 for a
    half-precision tensor)."""
    return reference == torch.float64 or (reference == torch.float32 and dtype in (torch.float16, torch.bfloat16))


def compare(eager: list[torch.Tensor], compiled: list[torch.Tensor], labels: list[str] | None = None, *,
            reference: list[torch.Tensor] | None = None, no_reference: str = "",
            reference_dtype: str = "float64") -> dict[str, Any]:
    """Compiled against eager, tensor by tensor; ``labels`` name them in the problems ("output 0").

    ``reference``: the same tensors from a float64 run (None where there is none; a tensor of
    another dtype counts as none), which decides the verdict by PyTorch's fp64_ref rule;
    ``no_reference`` says why there is none (printed beside the fallback rule); ``reference_dtype``
    names the reference run's dtype (float32 for a half-precision graph that does not run in float64)."""
    out: dict[str, Any] = {"tensors": len(eager), "max_abs_err": 0.0, "max_rel_err": 0.0, "nan_eager": 0,
                           "nan_compiled": 0, "ok": True, "problems": [], "per_tensor": []}
    if len(eager) != len(compiled):
        out.update(ok=False, problems=[f"eager returned {len(eager)} tensors, compiled {len(compiled)}"])
        return out
    if reference is not None and len(reference) != len(eager):
        no_reference = no_reference or (f"the float64 run returned {len(reference)} tensors, eager {len(eager)}")
        reference = None
    with_ref = 0
    for i, (e, c) in enumerate(zip(eager, compiled)):
        what = labels[i] if labels and i < len(labels) else f"output {i}"
        if e.shape != c.shape or e.dtype != c.dtype:
            out["ok"] = False
            out["problems"].append(f"{what}: eager {e.dtype} {list(e.shape)}, compiled {c.dtype} {list(c.shape)}")
            continue
        # On the tensors' own device: a model's logits (100M elements) would take seconds on the host.
        e64, c64 = e.detach().double(), c.detach().to(e.device).double()
        r = reference[i] if reference is not None else None
        r64 = (r.detach().to(e.device).double() if r is not None and _finer(r.dtype, e.dtype) and r.shape == e.shape
               else None)
        ne, nc = torch.isnan(e64), torch.isnan(c64)
        out["nan_eager"] += int(ne.sum())
        out["nan_compiled"] += int(nc.sum())
        if not torch.equal(ne, nc):
            # Compiled without eager's NaNs passes when the float64 run has none either (it is better).
            better = r64 is not None and not nc.any() and not torch.isnan(r64).any()
            if not better:
                out["ok"] = False
                out["problems"].append(f"{what}: NaN where eager has none (or the reverse)")
        finite = ~(ne | nc)
        if r64 is not None:
            finite &= ~torch.isnan(r64)
        if not finite.any():
            continue
        whole = bool(finite.all())  # no NaN anywhere: no masked copies
        ef, cf = (e64, c64) if whole else (e64[finite], c64[finite])
        max_abs = float((ef - cf).abs().max())
        top = float(ef.abs().max())
        out["max_abs_err"] = max(out["max_abs_err"], max_abs)
        out["max_rel_err"] = max(out["max_rel_err"], max_abs / top if top > 0 else 0.0)
        if e.is_floating_point() or e.is_complex():
            rf = None if r64 is None else r64 if whole else r64[finite]
            row = _judge_float(what, ef, cf, rf, e.dtype, reference_dtype)
            with_ref += r64 is not None
            out["per_tensor"].append(row)
            if not row["ok"]:
                out["ok"] = False
                out["problems"].append(row["problem"])
        elif max_abs != 0:
            out["ok"] = False
            out["problems"].append(f"{what}: integer results differ")
    out.update(_summary(out["per_tensor"], with_ref, no_reference, reference_dtype))
    out["max_abs_err"] = float(f"{out['max_abs_err']:.3g}")
    out["max_rel_err"] = float(f"{out['max_rel_err']:.3g}")
    out["rel_err_is"] = "max |compiled - eager| / max |eager|, per tensor"
    return out


def _summary(rows: list[dict[str, Any]], with_ref: int, no_reference: str,
             reference_dtype: str = "float64") -> dict[str, Any]:
    """The verdict's headline: both errors against the reference (the worst tensor: a failing one, else
    one the rmse rule decided, by compiled's rmse over eager's) and the rule that decided, or the
    fallback and why; how many tensors passed by allclose to eager and how many by the rmse rule."""
    out: dict[str, Any] = {"reference": reference_dtype if with_ref else "none", "no_reference": no_reference}
    judged = [r for r in rows if "compiled_rmse" in r]
    if judged:
        by_rmse = [r for r in judged if "allclose" not in r]
        pool = [r for r in judged if not r["ok"]] or by_rmse
        worst = (max(pool, key=lambda r: (r["compiled_rmse"] + 1e-30) / (r["eager_rmse"] + 1e-30)) if pool
                 else max(judged, key=lambda r: r["compiled_rmse"]))  # all allclose: the furthest from float64
        out["worst"] = worst["what"]
        for key in ("eager_rmse", "compiled_rmse", "eager_max_abs", "compiled_max_abs", "reference_rms"):
            out[key] = float(f"{worst[key]:.3g}")
        out["rule"] = worst["rule"]
        out["within_allclose"] = len(judged) - len(by_rmse)
        out["by_rmse_rule"] = len(by_rmse)
        if not by_rmse:
            out["allclose_tol"] = worst["allclose"]
    elif rows:
        out["rule"] = rows[0]["rule"]
    if with_ref and with_ref < len(rows):
        out["no_reference"] = no_reference or f"{len(rows) - with_ref} tensors have no {reference_dtype} counterpart"
    return out


# ---------------------------------------------------------------- the float64 run

def _floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() and t.dtype != torch.float64


def _to_float64(value: Any) -> Any:
    """``value`` with every floating tensor in it a float64 copy (leaves keep requires_grad)."""
    def copy(tensor: torch.Tensor) -> torch.Tensor:
        t = tensor.detach()
        t = t.to(torch.float64) if _floating(t) else t.clone()
        return t.requires_grad_(tensor.requires_grad and t.is_floating_point())

    return _map_tensors(value, copy)


def _held_tensors(modules: list) -> list[tuple[Any, str, str]]:
    """(owner module, "param" or "buffer", name) of every floating tensor the modules hold."""
    seen: set[int] = set()
    params: set[int] = set()  # a tied weight (GPT-2's lm_head and wte) is one parameter: cast once
    out = []
    for top in modules:
        for m in top.modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            for name, p in m._parameters.items():
                if p is not None and _floating(p) and id(p) not in params:
                    params.add(id(p))
                    out.append((m, "param", name))
            for name, b in m._buffers.items():
                if b is not None and _floating(b):
                    out.append((m, "buffer", name))
    return out


@contextmanager
def float64_weights(modules: list):
    """The modules' floating parameters and buffers as float64 while inside; on the way out each
    parameter gets back its own storage (``p.data``, same address, so compiled code and CUDA graphs
    that captured it are untouched), its gradient, and each buffer its own tensor."""
    held = _held_tensors(modules)
    saved = []
    try:
        for m, kind, name in held:
            if kind == "param":
                p = m._parameters[name]
                saved.append((m, kind, name, p.data, p.grad))
                p.grad = None
                p.data = p.data.to(torch.float64)
            else:
                b = m._buffers[name]
                saved.append((m, kind, name, b, None))
                m._buffers[name] = b.to(torch.float64)
        yield
    finally:
        for m, kind, name, data, grad in reversed(saved):
            if kind == "param":
                p = m._parameters[name]
                p.data = data
                p.grad = grad
            else:
                m._buffers[name] = data


def weight_bytes(modules: list) -> int:
    return sum(getattr(m, "_parameters" if k == "param" else "_buffers")[n].numel() * 8
               for m, k, n in _held_tensors(modules))


def float64_budget(request: dict, modules: list, inputs: tuple) -> str:
    """'' when a float64 run fits, else why not (one phrase)."""
    need = weight_bytes(modules) + sum(t.numel() * 8 for t in tensors_of(inputs))
    if request["device"] == "cuda":
        free, _ = torch.cuda.mem_get_info()
        if need * 3 > free:  # the weights, the inputs and room for float64 activations
            return (f"a float64 copy of the weights and inputs ({need / 1e9:.1f} GB) does not fit 1/3 of the "
                    f"{free / 1e9:.1f} GB free on the GPU")
    return ""


def float64_run(request: dict, module, fn, backward: bool, options: dict, inputs: tuple,
                written: list[int]) -> tuple[list[torch.Tensor] | None, str]:
    """The call in float64 (weights and floating inputs cast), its tensors in the order the
    correctness check lists them (outputs, gradients, inputs written in place); or None and why not."""
    modules = session.modules_of(fn, module)
    why = float64_budget(request, modules, inputs)
    if why:
        return None, why
    mine = _to_float64(inputs)
    try:
        with float64_weights(modules):
            step = Step(fn, backward, options)
            out = step(mine)
            tensors = [t.detach().clone() for t in tensors_of(out)]
            if backward:
                tensors += [t.grad.detach().clone() for t in step.leaves(mine) if t.grad is not None]
            after = tensors_of(mine)
            tensors += [after[i].detach().clone() for i in written if i < len(after)]
            if request["device"] == "cuda":
                torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        return None, "the float64 run ran out of memory"
    except Exception as exc:  # an op without float64, a dtype hard-coded in the function: the fallback
        first = (str(exc).splitlines() or [""])[0][:160]
        return None, f"the float64 run failed: {exc.__class__.__name__}: {first}"
    finally:
        if request["device"] == "cuda":
            torch.cuda.empty_cache()
    if not any(t.dtype == torch.float64 for t in tensors):
        return None, "the function's results do not become float64 when its inputs and weights do"
    return tensors, ""


# ---------------------------------------------------------------- the check

def correctness(request: dict, module, eager: Step, compiled: Step) -> dict[str, Any]:
    seed = int(time.time() * 1000) % (1 << 31)
    torch.manual_seed(seed)
    inputs = make_inputs(request, module, request["device"])
    results, labels, sides = [], [], []
    before = tensors_of(inputs)  # no call is handed these: they are what each side's own copy held going in
    for step in (eager, compiled):
        mine = _copy(inputs)  # each side gets its own copy: a function may write its inputs in place
        out = call_guarded(step, mine, request)
        tensors = [t.detach().clone() for t in tensors_of(out)]
        labels = [f"output {i}" for i in range(len(tensors))]
        if step.backward:
            grads = [t.grad.detach().clone() for t in step.leaves(mine) if t.grad is not None]
            labels += [f"gradient {i}" for i in range(len(grads))]
            tensors += grads
        results.append(tensors)
        sides.append([t.detach() for t in tensors_of(mine)])
    # An input either side wrote in place is compared as it was left (a compiled call that writes an
    # input eager only reads is wrong too).
    written = sorted({i for after in sides for i, (b, a) in enumerate(zip(before, after))
                      if b.shape == a.shape and not torch.equal(b, a)})
    for tensors, after in zip(results, sides):
        tensors += [after[i].clone() for i in written]
    labels += [f"input {i} as written in place" for i in written]
    # The float64 run last: its weights are swapped back before anything else calls the function.
    reference, why = float64_run(request, module, eager.fn, eager.backward, request.get("options") or {},
                                 inputs, written)
    verdict = compare(results[0], results[1], labels, reference=reference, no_reference=why)
    verdict["seed"] = seed
    verdict["compared"] = ("outputs" + (" and gradients" if eager.backward else "")
                           + (f", {len(written)} input{'s' if len(written) != 1 else ''} written in place" if written else "")
                           + ", fresh random inputs")
    return verdict


def _copy(value: Any) -> Any:
    """``value`` with every tensor in it cloned (leaves stay leaves that require grad as before)."""
    return _map_tensors(value, lambda t: t.detach().clone().requires_grad_(t.requires_grad))


def _map_tensors(value: Any, fn) -> Any:
    """``value`` with ``fn`` applied to every tensor in it, lists, tuples (named ones too) and dicts rebuilt."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        items = [_map_tensors(v, fn) for v in value]
        return type(value)(items) if isinstance(value, list) or type(value) is tuple else type(value)(*items)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value
