"""Tiny stand-ins for a reader's own training objects, so the training page's examples
(docs/training.md) and the integration tests run offline on a CPU in seconds: a Lightning module
and an HF Trainer-shaped model that draw a 16x16 image per prompt, data for them, and a
diffusers-shaped pipeline. They learn nothing useful; they only have the shapes the callbacks use.
"""
from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

try:
    import lightning.pytorch as L
except ImportError:  # the standalone pytorch_lightning distribution
    import pytorch_lightning as L

#: Size of the latent code each prompt maps to.
CODE = 8
SIDE = 16


def prompt_code(prompt: str) -> torch.Tensor:
    """A fixed latent per prompt, so a model's samples change only as its weights train.

    Examples:
        >>> bool((prompt_code("a cat") == prompt_code("a cat")).all()), tuple(prompt_code("a cat").shape)
        (True, (8,))
    """
    gen = torch.Generator().manual_seed(zlib.crc32(prompt.encode()))
    return torch.randn(CODE, generator=gen)


def _codes(prompts: list[str], device: torch.device | str = "cpu") -> torch.Tensor:
    """The stacked codes of `prompts`, on `device`."""
    return torch.stack([prompt_code(p) for p in prompts]).to(device)


class TinyGenerator(L.LightningModule):
    """A LightningModule trained to map codes to target images; `generate(prompts)` samples one
    image per prompt (a BCHW tensor in [0, 1]), the call a JudgeCallback's `sample_fn` makes.

    Examples:
        >>> tuple(TinyGenerator().generate(["a red car", "a cat"]).shape)
        (2, 3, 16, 16)
    """

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(CODE, 3 * SIDE * SIDE)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Images in [0, 1] for a batch of codes."""
        return torch.sigmoid(self.net(z)).view(-1, 3, SIDE, SIDE)

    def generate(self, prompts: list[str]) -> torch.Tensor:
        """One image per prompt, from the prompt's fixed code."""
        return self(_codes(prompts, self.device))

    def training_step(self, batch, batch_idx):
        """Mean squared error to the target images, logged as train_loss."""
        z, target = batch
        loss = F.mse_loss(self(z), target)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        """The same error on validation batches, so a validation loop (and the callback) runs."""
        z, target = batch
        self.log("val_loss", F.mse_loss(self(z), target))

    def configure_optimizers(self):
        """Plain SGD with a large step, so a few steps visibly change the samples."""
        return torch.optim.SGD(self.parameters(), lr=1.0)


def loaders(n: int = 16, batch_size: int = 4) -> tuple[DataLoader, DataLoader]:
    """Train and validation loaders of (code, target image) pairs for TinyGenerator (the same rows).

    Examples:
        >>> train, val = loaders(n=8, batch_size=4)
        >>> len(train), [tuple(t.shape) for t in next(iter(val))]
        (2, [(4, 8), (4, 3, 16, 16)])
    """
    gen = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(n, CODE, generator=gen), torch.rand(n, 3, SIDE, SIDE, generator=gen))
    return DataLoader(data, batch_size=batch_size), DataLoader(data, batch_size=batch_size)


class TinyImageModel(nn.Module):
    """An HF Trainer-shaped model: `forward(z, labels)` returns `{"loss", "logits"}`, and
    `generate_images(prompts)` samples one image per prompt (a BCHW tensor in [0, 1]).

    Examples:
        >>> model = TinyImageModel()
        >>> sorted(model(**Rows(2)[0:2])), tuple(model.generate_images(["a cat"]).shape)
        (['logits', 'loss'], (1, 3, 16, 16))
    """

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(CODE, 3 * SIDE * SIDE)

    def images(self, z: torch.Tensor) -> torch.Tensor:
        """Images in [0, 1] for a batch of codes."""
        return torch.sigmoid(self.net(z)).view(-1, 3, SIDE, SIDE)

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> dict:
        """The Trainer's call: the loss against `labels` and the images as logits."""
        out = self.images(z)
        return {"loss": F.mse_loss(out, labels), "logits": out}

    def generate_images(self, prompts: list[str]) -> torch.Tensor:
        """One image per prompt, from the prompt's fixed code."""
        return self.images(_codes(prompts, self.net.weight.device))


class Rows(Dataset):
    """Rows for TinyImageModel under an HF Trainer: `{"z": code, "labels": target image}`."""

    def __init__(self, n: int = 8) -> None:
        gen = torch.Generator().manual_seed(0)
        self.z, self.y = torch.randn(n, CODE, generator=gen), torch.rand(n, 3, SIDE, SIDE, generator=gen)

    def __len__(self) -> int:
        """The number of rows."""
        return len(self.z)

    def __getitem__(self, i: int | slice) -> dict:
        """Row `i` (or a slice of rows) as the model's keyword arguments."""
        return {"z": self.z[i], "labels": self.y[i]}


class TinyPipeline:
    """A diffusers-shaped text-to-image pipeline: `pipeline(prompts).images` is a list of PIL
    images (noise seeded by each prompt), as a validation step in a diffusers script makes them.

    Examples:
        >>> [image.size for image in TinyPipeline(size=32)(["a cat", "a dog"]).images]
        [(32, 32), (32, 32)]
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size

    def __call__(self, prompts: list[str]) -> SimpleNamespace:
        """One image per prompt, in an output object with an `images` list."""
        images = []
        for prompt in prompts:
            rng = np.random.RandomState(zlib.crc32(prompt.encode()))
            images.append(Image.fromarray(rng.randint(0, 256, (self.size, self.size, 3), dtype=np.uint8)))
        return SimpleNamespace(images=images)
