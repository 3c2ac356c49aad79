"""Offline test helpers: tiny random checkpoints, a Hub-cache installer, the method conformance
suite, training stand-ins (`training_standins`) and local servers (`processes`). Builders are
imported on use, so this package stays light."""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "build_tiny_vlm": "vlmjudge.testing.tiny_vlm",
    "build_tiny_family": "vlmjudge.testing.tiny_families",
    "build_tiny_clip": "vlmjudge.testing.tiny_encoders",
    "build_tiny_dinov2": "vlmjudge.testing.tiny_encoders",
    "build_tiny_siglip": "vlmjudge.testing.tiny_encoders",
    "build_tiny_text_to_image": "vlmjudge.testing.tiny_diffusers",
    "build_tiny_image_edit": "vlmjudge.testing.tiny_diffusers",
    "install_in_hf_cache": "vlmjudge.testing.hub_cache",
    "check_method": "vlmjudge.testing.conformance",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'vlmjudge.testing' has no attribute {name!r}")
