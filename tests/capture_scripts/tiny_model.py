"""The small real model the capture tests profile: convolutions, linear layers, a transformer
encoder layer (self-attention); built here, nothing downloaded.

Run by the leveled runner (`xsp-trace capture ... -- python tiny_model.py`); the tests also
import TinyModel to compare the captured layers with its module tree.
"""

import torch
from torch import nn


class TinyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.proj = nn.Linear(16, 32)
        self.encoder = nn.TransformerEncoderLayer(32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv(x)  # (B, 16, 8, 8)
        tokens = self.proj(x.flatten(2).transpose(1, 2))  # (B, 64, 32)
        return self.head(self.encoder(tokens).mean(dim=1))


def make_input(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 16, 16)


def build() -> TinyModel:
    torch.manual_seed(0)
    return TinyModel().eval()


if __name__ == "__main__":
    from xsp_trace.capture import run

    torch.set_num_threads(1)
    run(build(), make_input, name="tiny")
