"""A 2-block transformer encoder profiled by xsp-trace's leveled runner (inference, CPU or GPU).

    xsp-trace capture --levels M,ML,MLG --batch-sizes 1,4 -o tf-run \
        -- python -m xsp_trace.capture.examples.transformer_2block
    xsp-trace convert tf-run

Held out: no default or threshold of the capture was tuned on this model (bench/capture/stability.py
measures on it). Pre-norm blocks written out (attention + MLP), d=128, 4 heads, 64 tokens.
With --train, each timed step is forward + cross-entropy loss + loss.backward() + SGD step.
"""

import sys

import torch
from torch import nn

from xsp_trace.capture import run

TOKENS = 64
WIDTH = 128
VOCAB = 256


class Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width: int = WIDTH, heads: int = 4):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Transformer2Block(nn.Module):
    def __init__(self, vocab: int = VOCAB, width: int = WIDTH):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.norm(self.blocks(self.embed(tokens))))


def make_input(batch_size: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch_size, TOKENS), generator=torch.Generator().manual_seed(batch_size))


def train_step(optimizer):
    """One training step on a batch: forward, next-token loss, backward, SGD update."""

    def step(model, tokens):
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return step


def main() -> None:
    torch.manual_seed(0)
    model = Transformer2Block()
    if "--train" in sys.argv[1:]:
        model.train()
        run(model, make_input, name="transformer_2block_train", step=train_step(torch.optim.SGD(model.parameters(), lr=1e-3)))
    else:
        run(model.eval(), make_input, name="transformer_2block")


if __name__ == "__main__":
    main()
