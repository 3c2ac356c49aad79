"""MUSIQ, NIQE and BRISQUE through `pyiqa`: no-reference image quality, three registered methods.

`pyiqa.create_metric(name, device=, pretrained_model_path=, **options)` builds the metric with its
default settings (MUSIQ with the KonIQ-10k checkpoint, as TerraVis evaluates it) and loads its
released weights or statistics: downloaded by pyiqa when `weights` is None, else from that file.
Each image goes in alone at its own size, as an RGB tensor in [0, 1]. MUSIQ is higher-is-better;
NIQE and BRISQUE are lower-is-better, which their statistics say.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Mapping

from .base import (Item, ItemFailed, TrainedScorer, default_device, one_line, package_version, quiet_stdout, require,
                   trained_spec)

#: The optional extra that installs these scorers.
EXTRA = "iqa"
#: Modules that must import for these scorers to run.
REQUIRES = ("pyiqa",)
#: method -> (pyiqa metric name, declared score range (pyiqa's own), higher is better, statistic label).
METRICS: dict[str, tuple[str, tuple[float, float], bool, str]] = {
    "musiq": ("musiq", (0.0, 100.0), True, "mean MUSIQ (KonIQ)"),
    "niqe": ("niqe", (0.0, 100.0), False, "mean NIQE"),
    "brisque": ("brisque", (0.0, 150.0), False, "mean BRISQUE"),
}


class IQAScorer(TrainedScorer):
    """Scores `image` with one pyiqa metric.

    Args:
        method: "musiq", "niqe" or "brisque".
        judge: not used: a trained scorer has no judge (every method is built with one).
        weights: a local weights file; None: pyiqa's release.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
        options: settings of the network that override pyiqa's (its `create_metric` keywords).
    """

    def __init__(self, method: str, judge: Any = None, *, weights: str | None = None, device: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        if method not in METRICS:
            raise ValueError(f"no pyiqa method {method!r}; these are {sorted(METRICS)}")
        pyiqa = require(method, EXTRA, "pyiqa")
        if weights is not None and not os.path.isfile(weights):
            raise FileNotFoundError(f"{method}: no weights file at {weights}")
        self.method, self.device = method, default_device(device)
        name, _, higher_is_better, _ = METRICS[method]
        with quiet_stdout():
            self.metric = pyiqa.create_metric(name, as_loss=False, device=self.device,
                                              **({"pretrained_model_path": str(weights)} if weights else {}),
                                              **dict(options or {}))
        if bool(self.metric.lower_better) == higher_is_better:
            raise ValueError(f"{method}: pyiqa says lower_better={self.metric.lower_better}, unlike this method's statistics")
        self.made_by = {"package": package_version("pyiqa"), "metric": name,
                        "weights": "pyiqa's release" if weights is None else str(weights),
                        **({"options": dict(options)} if options else {})}

    @property
    def spec(self) -> Any:
        return SPECS[self.method]

    def score_chunk(self, items: list[Item]) -> list[float | ItemFailed]:
        import torch
        from torchvision.transforms.functional import to_tensor

        scores: list[float | ItemFailed] = []
        for item in items:
            pixels = to_tensor(item.image).unsqueeze(0).to(self.device)
            try:
                with torch.inference_mode():
                    value = self.metric(pixels)
            except torch.OutOfMemoryError:
                raise
            except (AssertionError, ValueError, RuntimeError, IndexError) as exc:  # the metric refuses this image
                scores.append(ItemFailed(f"{self.method} could not score this image "
                                         f"({item.image.width}x{item.image.height}): {type(exc).__name__}: {one_line(exc)}"))
                continue
            scores.append(float(torch.as_tensor(value).reshape(-1)[0]))
        return scores


def build(method: str, judge: Any, **config: Any) -> IQAScorer:
    """A scorer of one pyiqa method; config: weights (file), device, options (pyiqa network settings).
    A judge, if given, is not used. Each spec binds `method` with functools.partial, so specs pickle."""
    return IQAScorer(method, judge, **config)


SPECS = {method: trained_spec(name=method, inputs=("image",), build=functools.partial(build, method), score_range=score_range,
                              extra=EXTRA, requires=REQUIRES, scorer=IQAScorer,
                              label=label, higher_is_better=higher,
                              description=f"{method.upper()} no-reference image quality through pyiqa "
                                          f"({'higher' if higher else 'lower'} is better).")
         for method, (_, score_range, higher, label) in METRICS.items()}
MUSIQ_SPEC, NIQE_SPEC, BRISQUE_SPEC = SPECS["musiq"], SPECS["niqe"], SPECS["brisque"]
