"""LPIPS of an image to its reference through torchmetrics (FAGER's perceptual-similarity check).

torchmetrics' `LearnedPerceptualImagePatchSimilarity` (AlexNet by default, as LPIPS recommends)
computes every number: its backbone comes from torchvision's ImageNet weights, its linear layers
ship inside torchmetrics. Images go in as RGB tensors in [0, 1] (`normalize=True`). Both images of
a pair must share a size: by default the reference is resized (bicubic) to the image's size and the
record says so; `size=N` resizes both to N x N instead. Lower is better.
"""
from __future__ import annotations

from typing import Any

from PIL import Image

from .base import Item, ItemFailed, TrainedScorer, default_device, one_line, package_version, trained_spec

#: The optional extra that installs this scorer (None: vlmjudge's own dependencies suffice).
EXTRA = None
#: Modules that must import for this scorer to run.
REQUIRES = ("torchmetrics", "torchvision")
NETS = ("alex", "vgg", "squeeze")
#: LPIPS is non-negative with no fixed top; pairs near 1 are already very unlike, so 2 is the declared end.
SCORE_RANGE = (0.0, 2.0)


class LpipsScorer(TrainedScorer):
    """Scores `image` against `reference` with torchmetrics' LPIPS, one pair per call.

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        net: the backbone LPIPS compares features of: "alex", "vgg" or "squeeze".
        size: resize both images to size x size pixels first; None: the reference is resized to
            the image's size where they differ.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
    """

    def __init__(self, judge: Any = None, *, net: str = "alex", size: int | None = None,
                 device: str | None = None) -> None:
        from torchmetrics.image.lpip import LearnedPerceptualImagePatchSimilarity

        if net not in NETS:
            raise ValueError(f"lpips: net must be one of {NETS}, got {net!r}")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 16):
            raise ValueError(f"lpips: size must be a whole number of pixels >= 16, got {size!r}")
        self.size, self.device = size, default_device(device)
        self.metric = LearnedPerceptualImagePatchSimilarity(net_type=net, reduction="none", normalize=True)
        self.metric = self.metric.to(self.device).eval()
        self.made_by = {"package": package_version("torchmetrics"), "net": net,
                        "size": size if size is not None else "the image's size"}

    @property
    def spec(self) -> Any:
        return SPEC

    def _pair(self, item: Item) -> tuple[Image.Image, Image.Image]:
        if self.size is not None:
            side = (self.size, self.size)
            return item.image.resize(side, Image.BICUBIC), item.reference.resize(side, Image.BICUBIC)
        if item.reference.size != item.image.size:
            return item.image, item.reference.resize(item.image.size, Image.BICUBIC)
        return item.image, item.reference

    def details(self, item: Item) -> dict[str, Any]:
        """Whether the reference was resized to the image's size for this pair (default sizing only)."""
        if self.size is not None or item.reference is None:
            return {}
        return {"reference_resized": item.reference.size != item.image.size}

    def score_chunk(self, items: list[Item]) -> list[float | ItemFailed]:
        import torch
        from torchvision.transforms.functional import to_tensor

        scores: list[float | ItemFailed] = []
        for item in items:
            image, reference = (to_tensor(p).unsqueeze(0).to(self.device) for p in self._pair(item))
            try:
                with torch.inference_mode():
                    value = self.metric(image, reference)
            except torch.OutOfMemoryError:
                raise
            except (ValueError, RuntimeError) as exc:  # e.g. a pair too small for the backbone's strides
                scores.append(ItemFailed(f"lpips could not compare this pair ({image.shape[-1]}x{image.shape[-2]}): "
                                         f"{type(exc).__name__}: {one_line(exc)}"))
                continue
            finally:
                self.metric.reset()  # the metric keeps every score it saw; one pair at a time needs none
            scores.append(float(torch.as_tensor(value).reshape(-1)[0]))
        return scores


def build(judge: Any, **config: Any) -> LpipsScorer:
    """An LPIPS scorer; config: net (alex, vgg, squeeze), size, device. A judge, if given, is not used."""
    return LpipsScorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=LpipsScorer,
    name="lpips", inputs=("image", "reference"), build=build, score_range=SCORE_RANGE, label="mean LPIPS",
    higher_is_better=False,
    description="LPIPS (learned perceptual image patch similarity) of an image to its reference through "
                "torchmetrics; lower is closer.")
