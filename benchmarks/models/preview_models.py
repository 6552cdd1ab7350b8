"""Whole transformers models for `--preview` checks: the real library classes, built from small
configs with random weights (nothing is downloaded). Each one converts dtypes in ``__init__``
(``.to(torch.bfloat16)``) or holds registered buffers that the forward indexes or slices (position
ids, token types, causal masks), the things a preview of a real model has to get right. For the GPU
box, whose image has transformers (`bash scripts/gpu_verify.sh preview-models`), e.g.
`kernelscope capture benchmarks/models/preview_models.py::Llama4 --preview sm_90`.
"""

import torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

OPTIONS = {"no_grad": True, "eval": True, "args": "i64[2, 128] 0..1000"}


class Llama4(torch.nn.Module):
    """A 4-layer LlamaForCausalLM in bf16, converted in __init__ as a user would write it."""

    def __init__(self):
        super().__init__()
        config = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=1024)
        self.m = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, ids):
        return self.m(ids).logits


class Bert(torch.nn.Module):
    """A 4-layer BertModel (fp32): position ids and token types are registered buffers it slices."""

    def __init__(self):
        super().__init__()
        self.m = BertModel(BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                      intermediate_size=1024))

    def forward(self, ids):
        return self.m(ids).last_hidden_state


class GPT2Small(torch.nn.Module):
    """A 4-layer GPT2LMHeadModel (fp32), its head tied to the token embedding."""

    def __init__(self):
        super().__init__()
        self.m = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4))

    def forward(self, ids):
        return self.m(ids).logits
