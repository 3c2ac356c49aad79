"""Tiny image "generators" for the callback tests: linear maps from a prompt's code to a 16x16 image,
as a LightningModule and as an HF Trainer-shaped nn.Module."""
from __future__ import annotations

import zlib

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as L
except ImportError:  # the standalone pytorch_lightning distribution
    import pytorch_lightning as L

CODE = 8


def prompt_code(prompt: str) -> torch.Tensor:
    """A fixed latent per prompt, so samples change only as the weights train."""
    gen = torch.Generator().manual_seed(zlib.crc32(prompt.encode()))
    return torch.randn(CODE, generator=gen)


class TinyGenerator(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(CODE, 3 * 16 * 16)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(z)).view(-1, 3, 16, 16)

    def training_step(self, batch, batch_idx):
        z, target = batch
        loss = F.mse_loss(self(z), target)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        z, target = batch
        self.log("val_loss", F.mse_loss(self(z), target))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1.0)


def sample(module: TinyGenerator, prompts: list[str]) -> torch.Tensor:
    """The callback's sample_fn: one image per prompt, a BCHW tensor in [0, 1]."""
    z = torch.stack([prompt_code(p) for p in prompts]).to(module.device)
    return module(z)


def loaders(n: int = 16, batch_size: int = 4) -> tuple[DataLoader, DataLoader]:
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(n, CODE, generator=gen)
    target = torch.rand(n, 3, 16, 16, generator=gen)
    data = TensorDataset(z, target)
    return DataLoader(data, batch_size=batch_size), DataLoader(data, batch_size=batch_size)


class TinyImageModel(nn.Module):
    """A Trainer-shaped model: `forward(z, labels) -> {"loss"}`, and 16x16 images from prompt codes."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(CODE, 3 * 16 * 16)

    def images(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(z)).view(-1, 3, 16, 16)

    def forward(self, z, labels=None):
        out = self.images(z)
        return {"loss": F.mse_loss(out, labels), "logits": out}


def hf_sample(model: TinyImageModel, prompts: list[str]) -> torch.Tensor:
    """The Trainer callback's sample_fn."""
    return model.images(torch.stack([prompt_code(p) for p in prompts]))


class Rows(torch.utils.data.Dataset):
    """Trainer rows: a code and a target image."""

    def __init__(self, n: int = 8) -> None:
        gen = torch.Generator().manual_seed(0)
        self.z, self.y = torch.randn(n, CODE, generator=gen), torch.rand(n, 3, 16, 16, generator=gen)

    def __len__(self) -> int:
        return len(self.z)

    def __getitem__(self, i: int) -> dict:
        return {"z": self.z[i], "labels": self.y[i]}
