"""An attention block: projections, scaled_dot_product_attention (a fused attention kernel), output."""

import torch
import torch.nn.functional as F


def attention(x, wq, wk, wv, wo):
    batch, seq, dim = x.shape
    heads = 8
    q = (x @ wq).view(batch, seq, heads, dim // heads).transpose(1, 2)
    k = (x @ wk).view(batch, seq, heads, dim // heads).transpose(1, 2)
    v = (x @ wv).view(batch, seq, heads, dim // heads).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(batch, seq, dim) @ wo


def attention_inputs(device):
    dtype = torch.float16 if device == "cuda" else torch.float32
    dim = 512
    x = torch.randn(4, 256, dim, device=device, dtype=dtype)
    ws = [torch.randn(dim, dim, device=device, dtype=dtype) / dim**0.5 for _ in range(4)]
    return (x, *ws)
