"""A training script as users write them, for ``kernelscope run`` (`bash scripts/gpu_verify.sh run`): argparse
flags, a transformers GPT-2 built from a config, AdamW, torch.compile on the model, and a loop over
random token batches that never ends unless ``--steps`` says so. The compiled step is this file's
``loss_of`` (the model's forward and the cross entropy on its logits), so its kernels land on the
library's lines and on this file's own.

    kernelscope run --graphs 2 --no-ui -o /tmp/x -- python3 benchmarks/scripts/train_hf.py --layers 2
"""

import argparse
import itertools

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--steps", type=int, default=0, help="0: train forever")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_embd=args.embd, n_head=args.heads, vocab_size=args.vocab,
                        n_positions=max(args.seq, 256))
    model = GPT2LMHeadModel(config).to(args.device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    def loss_of(ids: torch.Tensor) -> torch.Tensor:
        logits = model(input_ids=ids).logits
        shifted = logits[:, :-1].reshape(-1, args.vocab).float()
        return F.cross_entropy(shifted, ids[:, 1:].reshape(-1))

    compiled = torch.compile(loss_of)
    steps = range(args.steps) if args.steps else itertools.count()
    for step in steps:
        ids = torch.randint(0, args.vocab, (args.batch, args.seq), device=args.device)
        loss = compiled(ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
