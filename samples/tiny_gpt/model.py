"""A tiny GPT over two files: embeddings and 4 repeated blocks (blocks.py), layer norm, logits."""

import torch
from blocks import Block
from torch import nn

# Token ids in [0, vocab); a model is usually inspected in inference: no grad, eval().
OPTIONS = {"no_grad": True, "eval": True, "args": "i64[2, 32] 0..512"}


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 64, heads: int = 4, layers: int = 4, context: int = 64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


tiny_gpt = TinyGPT

