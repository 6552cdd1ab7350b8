"""Preview: scaled_dot_product_attention's CUDA backend, chosen as torch's C++ chooser would for the
previewed arch, with no GPU to ask.

Part of the preview's quarantine (see capture/preview_patches.py, which registers these as aten
kernels inside ``preview_device``). Checked against torch 2.13 (CPU build) and torch 2.11 (CUDA build,
GPU hidden): aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (select_sdp_backend, dense inputs)
and attention.cpp's composite.
"""

from __future__ import annotations

from typing import Protocol

import torch


class GpuSpec(Protocol):
    """What the chooser reads of capture/preview_patches.py's GpuSpec (named here, not imported: that
    module imports this one)."""

    major: int
    minor: int

# torch.nn.attention.SDPBackend values (the C++ sdp::SDPBackend enum)
MATH, FLASH, EFFICIENT, CUDNN = 0, 1, 2, 3
_DEFAULT_ORDER = [FLASH, EFFICIENT, MATH, CUDNN]


def sdp_choice(spec: GpuSpec, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
               scale=None, enable_gqa=False) -> int:
    """The SDPA backend torch's CUDA chooser picks on ``spec``'s arch, for dense inputs. It honours
    torch.backends.cuda's enable flags and a priority order the user set; by default sm_90 / sm_100
    prefer cuDNN (torch >= 2.10 on CUDA 13 with cuDNN > 9.15, as the CUDA wheels ship), as a real
    H100/H200 does."""
    from torch.fx.experimental.symbolic_shapes import guard_or_false

    def true(cond) -> bool:
        return bool(guard_or_false(cond)) if not isinstance(cond, bool) else cond

    be = torch.backends.cuda
    major, minor = spec.major, spec.minor
    sm = major * 10 + minor
    q, k, v = query, key, value
    dense = all(t.dim() == 4 for t in (q, k, v))
    if not dense:
        return MATH if be.math_sdp_enabled() else -1
    half = q.dtype in (torch.float16, torch.bfloat16)
    same_dtype = q.dtype == k.dtype == v.dtype

    def common(ignore_singleton: bool) -> bool:
        batch_ok = true(q.size(0) == k.size(0)) and true(k.size(0) == v.size(0))
        qh, kh, vh = q.size(1), k.size(1), v.size(1)
        heads_ok = true(kh == vh) and (true(qh == kh) or (enable_gqa and true(qh % kh == 0)))
        seq_ok = true(q.size(2) > 0) and true(k.size(2) > 0)
        strides_ok = all(true(t.stride(-1) == 1) or (ignore_singleton and true(t.size(-1) == 1)) for t in (q, k, v))
        # check_last_dim_stride_equals_1_dense: off the CPU the mask's last dim needs stride 1 too (a
        # mask expanded from [.., 1] has stride 0 there: transformers' BERT mask under torch.compile).
        mask_ok = attn_mask is None or true(attn_mask.stride(-1) == 1)
        return same_dtype and batch_ok and heads_ok and seq_ok and strides_ok and mask_ok

    def cudnn() -> bool:
        if not be.cudnn_sdp_enabled() or not (80 <= sm <= 121) or not half or not common(True):
            return False
        if torch.are_deterministic_algorithms_enabled() and not torch.is_deterministic_algorithms_warn_only_enabled():
            return False
        if dropout_p * 16.0 != int(dropout_p * 16.0):
            return False
        limit = 256 if (major == 9 and minor == 0) or major == 10 else 128
        d_qk, d_v = q.size(3), v.size(3)
        return (true(q.size(0) <= 65535) and true(q.size(1) <= 65535) and true(d_qk <= limit) and true(d_v <= limit)
                and true(d_qk % 8 == 0) and true(d_v % 8 == 0) and true(k.size(2) != 1)
                and not (dropout_p and true(q.size(2) == 1)))

    def flash() -> bool:
        if not be.flash_sdp_enabled() or attn_mask is not None or not (80 <= sm <= 121) or not half:
            return False
        d = q.size(-1)
        if not (true(d == k.size(-1)) and true(d == v.size(-1)) and true(d <= 256)):
            return False
        if is_causal and not true(q.size(-2) == k.size(-2)):
            return False
        return common(True)

    def efficient() -> bool:
        if not be.mem_efficient_sdp_enabled() or not (50 <= sm <= 121):
            return False
        if q.dtype not in ((torch.float16, torch.float32, torch.bfloat16) if major >= 8 else (torch.float16, torch.float32)):
            return False
        align = max(4 if major >= 8 else 1, (8 if half else 4) if major >= 8 or (major >= 7 and half) else 1)
        dq, dv = q.size(-1), v.size(-1)
        if not (true(dq == k.size(-1)) and true(dq % align == 0) and true(dq > 0) and true(dv % align == 0)
                and true(dv > 0)):
            return False
        if major >= 8 and not all(true((t.storage_offset() * t.element_size()) % (align * t.element_size()) == 0)
                                  for t in (q, k, v)):
            return False
        return common(False)

    order = list(torch._C._get_sdp_priority_order())[:4]
    if order == _DEFAULT_ORDER and (major in (9, 10)):
        order = [CUDNN, FLASH, EFFICIENT, MATH]
    checks = {CUDNN: cudnn, FLASH: flash, EFFICIENT: efficient, MATH: be.math_sdp_enabled}
    for backend in order:
        if backend in checks and checks[backend]():
            return backend
    return -1


def sdpa_composite(spec: GpuSpec, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
                   scale=None, enable_gqa=False):
    """aten::scaled_dot_product_attention as attention.cpp composes it, with ``sdp_choice`` choosing."""
    import math

    aten = torch.ops.aten
    backend = sdp_choice(spec, query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                         enable_gqa=enable_gqa) if query.device.type == "cuda" else MATH
    mask = attn_mask
    if mask is not None and mask.dtype == torch.bool:
        # convert_boolean_attn_mask(_cudnn): where(mask, 0, -inf) (cuDNN: -65504), its operands built
        # in the order C++ evaluates them (the last first), so that the traced nodes are the same.
        neg = aten.scalar_tensor(-65504.0 if backend == CUDNN else -math.inf, dtype=query.dtype, device=mask.device)
        zero = aten.scalar_tensor(0.0, dtype=query.dtype, layout=torch.strided, device=mask.device)
        mask = aten.where(mask, zero, neg)
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    if backend == CUDNN:
        return aten._scaled_dot_product_cudnn_attention(query, key, value, mask, grad, dropout_p, is_causal, False,
                                                        scale=scale)[0]
    if backend == FLASH:
        head = query.size(-1)

        def pad8(t):
            return t if head % 8 == 0 else aten.pad(t, [0, 8 - head % 8])

        og_scale = scale if scale is not None else 1.0 / math.sqrt(head)
        out = aten._scaled_dot_product_flash_attention(pad8(query), pad8(key), pad8(value), dropout_p, is_causal,
                                                       False, scale=og_scale)[0]
        return out if out.size(-1) == head else out[..., :head]
    if backend == EFFICIENT:
        if mask is not None:
            aligned = all(mask.stride(i) % 8 == 0 for i in range(mask.dim() - 1)) and mask.stride(-1) == 1
            if not aligned:
                last = mask.size(-1)
                mask = aten.pad(mask, [0, 8 - last % 8])[..., :last]
            mask = mask.expand(query.size(0), query.size(1), query.size(2), key.size(2))
        return aten._scaled_dot_product_efficient_attention(query, key, value, mask, grad, dropout_p, is_causal,
                                                            scale=scale)[0]
    if backend != MATH:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    return aten._scaled_dot_product_attention_math(query, key, value, mask, dropout_p, is_causal, None,
                                                   scale=scale, enable_gqa=enable_gqa)[0]
