"""Image-image similarity of a regeneration to its reference: CLIP and DINOv2 cosine, in percent.

CLIP uses the projected image embeddings (`get_image_features`); DINOv2 pools
`last_hidden_state`, by the mean over all output tokens (the public release's choice, the
default) or the CLS token. Defaults follow the public release: CLIP ViT-B/32 and
DINOv2-base. Models load with `from_pretrained` (a Hub id or a local folder), run batched
under `inference_mode`, and cosines are taken in float64 and clamped to [-1, 1].
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from vlmjudge.images import to_pil
from vlmjudge.offline import ModelUnavailableError, unavailable_reason

from .scoring import cosine_percent

DEFAULT_CLIP_MODEL = "openai/clip-vit-base-patch32"
DEFAULT_DINO_MODEL = "facebook/dinov2-base"
POOLINGS = ("mean", "cls")


def _default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


class ImageEncoder(ABC):
    """A vision model that maps images to one vector each, batched, on its own device.

    Args:
        model_id: a Hub id or a local checkpoint folder, loaded with `from_pretrained`.
        device: where the model runs; None: "cuda" when a GPU is available, else "cpu".
        dtype: the model's dtype ("float32", "bfloat16", ...); None: float32.
        batch_size: images per forward pass.
        revision: the checkpoint's revision on the Hub.

    Examples:
        A tiny random DINOv2 built offline stands in for a real encoder:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_dinov2
        >>> encoder = DinoEncoder(build_tiny_dinov2(tempfile.mkdtemp() + "/dino"), device="cpu")
        >>> features = encoder.embed([Image.new("RGB", (64, 64), "red"), Image.new("RGB", (48, 80), "blue")])
        >>> tuple(features.shape), features.dtype, features.device.type
        ((2, 32), torch.float32, 'cpu')
    """

    kind = "encoder"

    def __init__(self, model_id: str, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int = 32, revision: str | None = None) -> None:
        import torch
        from transformers import AutoImageProcessor, AutoModel

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_id = str(model_id)
        self.revision = revision
        self.batch_size = batch_size
        self.device = device or _default_device()
        self.dtype = getattr(torch, dtype) if isinstance(dtype, str) else (dtype or torch.float32)
        self.model = AutoModel.from_pretrained(self.model_id, revision=revision, dtype=self.dtype)
        self.model = self.model.to(self.device).eval()
        self.processor = AutoImageProcessor.from_pretrained(self.model_id, revision=revision)
        self._check_model()

    def _check_model(self) -> None:
        """Raise when the loaded model cannot give this encoder's features."""

    @abstractmethod
    def _features(self, pixel_values: Any) -> Any:
        """One vector per image of a preprocessed batch."""

    def to(self, device: str) -> ImageEncoder:
        """Move the model (a torchmetrics Metric moves its encoders with it)."""
        self.device = str(device)
        self.model.to(self.device)
        return self

    def embed(self, images: Sequence[Any]) -> Any:
        """Float32 CPU tensor (n, d) of raw (unnormalised) features, computed in batches."""
        import torch

        pils = [to_pil(img, index=i) for i, img in enumerate(images)]
        if not pils:
            raise ValueError(f"{self.kind}: no images to embed")
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(pils), self.batch_size):
                batch = self.processor(images=pils[start:start + self.batch_size], return_tensors="pt")
                pixels = batch["pixel_values"].to(self.device, self.dtype)
                chunks.append(self._features(pixels).float().cpu())
        return torch.cat(chunks)

    def manifest(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model_id, "revision": self.revision}


class ClipEncoder(ImageEncoder):
    """CLIP projected image embeddings (and text embeddings, for the interrogator baseline)."""

    kind = "clip"

    def _check_model(self) -> None:
        if not hasattr(self.model, "get_image_features"):
            raise TypeError(f"{self.model_id} ({type(self.model).__name__}) has no get_image_features: not a CLIP model")

    def _features(self, pixel_values: Any) -> Any:
        out = self.model.get_image_features(pixel_values=pixel_values)
        return out if hasattr(out, "dim") else out.pooler_output  # transformers 5 wraps the projection

    def embed_text(self, texts: Sequence[str]) -> Any:
        """Float32 CPU tensor (n, d) of projected text embeddings."""
        import torch
        from transformers import AutoTokenizer

        if not hasattr(self, "_tokenizer"):
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=self.revision)
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                tokens = self._tokenizer(list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                                         return_tensors="pt").to(self.device)
                out = self.model.get_text_features(**tokens)
                chunks.append((out if hasattr(out, "dim") else out.pooler_output).float().cpu())
        return torch.cat(chunks)


class DinoEncoder(ImageEncoder):
    """DINOv2 features pooled from the last hidden state: mean over all tokens, or the CLS token.

    Args:
        model_id: a DINOv2 Hub id or local checkpoint folder.
        pooling: "mean" over all output tokens (the public release) or "cls".
        kwargs: as `ImageEncoder`: `device`, `dtype`, `batch_size`, `revision`.

    Examples:
        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_dinov2
        >>> encoder = DinoEncoder(build_tiny_dinov2(tempfile.mkdtemp() + "/dino"), pooling="cls", device="cpu")
        >>> encoder.manifest()["pooling"], tuple(encoder.embed([Image.new("RGB", (64, 64), "red")]).shape)
        ('cls', (1, 32))
        >>> DinoEncoder("unused", pooling="max")
        Traceback (most recent call last):
        ...
        ValueError: pooling must be one of ('mean', 'cls'), got 'max'
    """

    kind = "dino"

    def __init__(self, model_id: str, *, pooling: str = "mean", **kwargs: Any) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.pooling = pooling
        super().__init__(model_id, **kwargs)

    def _features(self, pixel_values: Any) -> Any:
        hidden = self.model(pixel_values=pixel_values).last_hidden_state
        return hidden.mean(dim=1) if self.pooling == "mean" else hidden[:, 0]

    def manifest(self) -> dict[str, Any]:
        return {**super().manifest(), "pooling": self.pooling}



@lru_cache(maxsize=8)
def load_encoder(kind: str, model_id: str, device: str | None = None, dtype: str | None = None,
                 pooling: str = "mean", revision: str | None = None, batch_size: int = 32) -> ImageEncoder:
    """A shared encoder instance per settings, so apps and repeated calls load weights once.

    Examples:
        Encoders are shared per settings, so weights load once:

        >>> import tempfile
        >>> from vlmjudge.testing import build_tiny_dinov2
        >>> path = build_tiny_dinov2(tempfile.mkdtemp() + "/dino")
        >>> load_encoder("dino", path, "cpu") is load_encoder("dino", path, "cpu")
        True
    """
    if kind == "clip":
        return ClipEncoder(model_id, device=device, dtype=dtype, revision=revision, batch_size=batch_size)
    if kind == "dino":
        return DinoEncoder(model_id, pooling=pooling, device=device, dtype=dtype, revision=revision,
                           batch_size=batch_size)
    raise ValueError(f"unknown encoder kind {kind!r}; use 'clip' or 'dino'")


def check_loadable(models: dict[str, Any]) -> None:
    """Raise one ModelUnavailableError naming every encoder id that cannot load, before any loads.

    Without this, offline, the default ids retry the Hub for half a minute and end in a raw OSError.

    Examples:
        Offline, a Hub id that is not in the cache is named before anything loads:

        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {"HF_HUB_OFFLINE": "1"}):
        ...     try:
        ...         check_loadable({"clip": "nobody/no-such-clip", "dino": None})
        ...     except Exception as error:
        ...         print(type(error).__name__, "|", str(error).split(" and ")[0])
        ModelUnavailableError | clip encoder 'nobody/no-such-clip' is not a local folder
    """
    defaults = {"clip": DEFAULT_CLIP_MODEL, "dino": DEFAULT_DINO_MODEL}
    problems = []
    for kind, spec in models.items():
        if isinstance(spec, str) or hasattr(spec, "__fspath__"):
            reason = unavailable_reason(str(spec))
            if reason is not None:
                default = " (the default)" if str(spec) == defaults[kind] else ""
                problems.append(f"{kind} encoder {str(spec)!r}{default} is {reason}")
    if problems:
        raise ModelUnavailableError(
            "; ".join(problems) + ". Pass a local folder or a cached Hub id as clip_model= and dino_model= "
            "(SimilarityScorer(clip=..., dino=...); None switches one off); "
            "`python -m vlmjudge.testing clip DIR` and `... dinov2 DIR` build tiny offline ones.")


class SimilarityScorer:
    """CLIP % and DINO % of generated images against references (either encoder can be switched off).

    Args:
        clip: the CLIP model: a Hub id or folder, a loaded `ClipEncoder`, or None for no CLIP %.
        dino: the DINOv2 model: a Hub id or folder, a loaded `DinoEncoder`, or None for no DINO %.
        pooling: how DINOv2 features are pooled: "mean" (the public release) or "cls".
        device, dtype, batch_size: as `ImageEncoder`, for the encoders loaded here.

    Examples:
        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_dinov2
        >>> scorer = SimilarityScorer(clip=None, dino=build_tiny_dinov2(tempfile.mkdtemp() + "/dino"), device="cpu")
        >>> red, blue = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (64, 64), "blue")
        >>> same, other = scorer.score([red, red], [red, blue])
        >>> round(same["dino"], 3), other["dino"] < 100, sorted(scorer.manifest())
        (100.0, True, ['dino'])
    """

    def __init__(self, clip: str | ClipEncoder | None = DEFAULT_CLIP_MODEL,
                 dino: str | DinoEncoder | None = DEFAULT_DINO_MODEL, *, pooling: str = "mean",
                 device: str | None = None, dtype: str | None = None, batch_size: int = 32) -> None:
        def make(kind: str, spec: Any) -> ImageEncoder | None:
            if spec is None or isinstance(spec, ImageEncoder):
                return spec
            return load_encoder(kind, str(spec), device, dtype, pooling, None, batch_size)

        check_loadable({"clip": clip, "dino": dino})

        self.encoders: dict[str, ImageEncoder] = {k: e for k, e in (("clip", make("clip", clip)),
                                                                    ("dino", make("dino", dino))) if e is not None}
        if not self.encoders:
            raise ValueError("SimilarityScorer needs at least one of clip= and dino=")

    def embed(self, images: Sequence[Any]) -> dict[str, Any]:
        """Features of `images` under every encoder, for reuse (a reference is embedded once)."""
        return {name: enc.embed(images) for name, enc in self.encoders.items()}

    def compare(self, ref_features: dict[str, Any], gen_features: dict[str, Any]) -> list[dict[str, float]]:
        """Per-pair percentages from precomputed features (rows paired in order)."""
        columns = {name: cosine_percent(ref_features[name], gen_features[name]).tolist() for name in self.encoders}
        n = len(next(iter(columns.values())))
        return [{name: float(values[i]) for name, values in columns.items()} for i in range(n)]

    def score(self, references: Sequence[Any], generated: Sequence[Any]) -> list[dict[str, float]]:
        """`{"clip": %, "dino": %}` for each (reference, generated) pair."""
        if len(references) != len(generated):
            raise ValueError(f"{len(references)} references but {len(generated)} generated images")
        if not references:
            raise ValueError("no image pairs to compare")
        return self.compare(self.embed(references), self.embed(generated))

    def manifest(self) -> dict[str, Any]:
        return {name: enc.manifest() for name, enc in self.encoders.items()}


def regeneration_similarity(references: Sequence[Any], generated: Sequence[Any], *,
                            clip_model: str | ImageEncoder | None = DEFAULT_CLIP_MODEL,
                            dino_model: str | ImageEncoder | None = DEFAULT_DINO_MODEL, pooling: str = "mean",
                            device: str | None = None) -> dict[str, float]:
    """Mean CLIP % and DINO % over pairs, in float64 and without torchmetrics (a script's one-off
    number); `regeneration.metric.regeneration_similarity` is the Metric's functional form.

    Examples:
        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_dinov2
        >>> red = Image.new("RGB", (64, 64), "red")
        >>> value = regeneration_similarity([red], [red], clip_model=None,
        ...                                 dino_model=build_tiny_dinov2(tempfile.mkdtemp() + "/dino"), device="cpu")
        >>> {name: round(v, 3) for name, v in value.items()}
        {'dino': 100.0}
    """
    scores = SimilarityScorer(clip_model, dino_model, pooling=pooling, device=device).score(references, generated)
    return {name: sum(s[name] for s in scores) / len(scores) for name in scores[0]}
