"""A small CNN + attention model profiled by xsp-trace's leveled runner.

    xsp-trace capture --levels M,ML,MLG --iterations 10 --batch-sizes 1,8 -o tiny-run \
        -- python -m xsp_trace.capture.examples.tiny_cnn
    xsp-trace convert tiny-run

Run on its own (python tiny_cnn.py) it captures M, ML and MLG with torch.profiler into ./xsp-run.
"""

import torch
from torch import nn

from xsp_trace.capture import run


class TinyNet(nn.Module):
    """conv -> relu -> pool -> conv -> relu -> self-attention over positions -> linear head."""

    def __init__(self, channels: int = 8, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
        )
        self.attention = nn.MultiheadAttention(2 * channels, num_heads=2, batch_first=True)
        self.norm = nn.LayerNorm(2 * channels)
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x):
        x = self.features(x)  # (B, C, H, W)
        tokens = x.flatten(2).transpose(1, 2)  # (B, H*W, C)
        attended, _ = self.attention(tokens, tokens, tokens, need_weights=False)
        return self.head(self.norm(attended + tokens).mean(dim=1))


def make_input(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 16, 16)


def main() -> None:
    torch.manual_seed(0)
    model = TinyNet().eval()
    run(model, make_input, name="tiny_cnn")


if __name__ == "__main__":
    main()
