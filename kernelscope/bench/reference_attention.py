"""Fused attention in float64, for the reference run of a bundle's FX graphs (bench/bundle_correctness.py).

A training step's graphs call the fused attention kernels by name (``aten._scaled_dot_product_efficient_
attention`` and its backward, the flash ones), which run in fp32, fp16 and bf16 only: an fp32 transformers
Llama's graphs could not run in float64, and its bench had no reference to judge by. Here each of them is
the math they stand for, in float64, with their outputs laid out as the kernels lay them out (batch, seq,
heads, dim in memory, so the graph's views of them hold) and their RNG state outputs empty; for any other
dtype, or with dropout on, the real kernel runs. Imports torch: the bench child only.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def _scores(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, is_causal: bool,
            scale: float | None) -> torch.Tensor:
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    if is_causal:  # top-left aligned, as F.scaled_dot_product_attention's is_causal
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), float("-inf"))
    return s


def _as_kernel_lays_out(out: torch.Tensor) -> torch.Tensor:
    """``out`` (batch, heads, seq, dim) stored as (batch, seq, heads, dim), as the fused kernels store it."""
    return out.transpose(1, 2).contiguous().transpose(1, 2)


def _forward(q, k, v, bias, is_causal, scale):
    s = _scores(q, k, bias, is_causal, scale)
    return _as_kernel_lays_out(torch.softmax(s, dim=-1) @ v), torch.logsumexp(s, dim=-1)


def _grads(grad_out, q, k, v, bias, is_causal, scale, want_bias: bool = False):
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
        b = bias.detach().requires_grad_(True) if want_bias and bias is not None else bias
        out, _ = _forward(*leaves, b, is_causal, scale)
        wrt = leaves + ([b] if want_bias and bias is not None else [])
        grads = torch.autograd.grad(out, wrt, grad_out)
    # Each gradient laid out as its input is, as the kernels return them: the graph views them as such.
    grads = [torch.empty_strided(t.shape, t.stride(), dtype=g.dtype, device=g.device).copy_(g)
             for t, g in zip(wrt, grads)]
    return grads + ([None] if not (want_bias and bias is not None) else [])


def _empty_state(q: torch.Tensor) -> torch.Tensor:
    return torch.empty((), dtype=torch.int64, device=q.device)


class _Op:
    """``aten.NAME`` with its ``.default`` the float64 math where it applies, else the real op."""

    def __init__(self, real: Any, math_version) -> None:
        self.real, self.math = real, math_version

    def default(self, *args, **kwargs):
        q = args[0] if args else kwargs.get("query")
        if isinstance(q, torch.Tensor) and q.dtype == torch.float64:
            got = self.math(*args, **kwargs)
            if got is not NotImplemented:
                return got
        return self.real.default(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _efficient(q, k, v, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
    if dropout_p:
        return NotImplemented
    out, lse = _forward(q, k, v, attn_bias, is_causal, scale)
    if compute_log_sumexp:  # the kernel's log-sum-exp rows are padded to a multiple of 32
        padded = -(-lse.shape[-1] // 32) * 32
        if padded != lse.shape[-1]:
            lse = torch.nn.functional.pad(lse, (0, padded - lse.shape[-1]), value=float("inf"))
    else:
        lse = lse.new_empty(lse.shape[:-1] + (0,))
    return out, lse, _empty_state(q), _empty_state(q)


def _efficient_backward(grad_out, q, k, v, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
                        grad_input_mask, is_causal=False, *, scale=None):
    if dropout_p:
        return NotImplemented
    want_bias = bool(grad_input_mask[3]) if len(grad_input_mask) > 3 else False
    return tuple(_grads(grad_out, q, k, v, attn_bias, is_causal, scale, want_bias))


def _flash(q, k, v, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    if dropout_p:
        return NotImplemented
    out, lse = _forward(q, k, v, None, is_causal, scale)
    empty = torch.empty(0, dtype=torch.int32, device=q.device)
    return (out, lse, empty, empty, q.shape[-2], k.shape[-2], _empty_state(q), _empty_state(q),
            torch.empty(0, dtype=q.dtype, device=q.device))


def _flash_backward(grad_out, q, k, v, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
                    philox_seed, philox_offset, *, scale=None):
    if dropout_p:
        return NotImplemented
    return tuple(_grads(grad_out, q, k, v, None, is_causal, scale)[:3])


_MATH = {"_scaled_dot_product_efficient_attention": _efficient,
         "_scaled_dot_product_efficient_attention_backward": _efficient_backward,
         "_scaled_dot_product_flash_attention": _flash,
         "_scaled_dot_product_flash_attention_backward": _flash_backward}


class _Aten:
    def __getattr__(self, name: str) -> Any:
        real = getattr(torch.ops.aten, name)
        return _Op(real, _MATH[name]) if name in _MATH else real


def reference_aten() -> Any:
    """``torch.ops.aten`` for a graph run in float64: the fused attention ops as their float64 math."""
    return _Aten()

