"""Fixtures of the trained-scorer tests: a package gate that skips where a scorer's package is absent
(but fails under CI=true for the packages the test extra installs), and tiny SigLIP checkpoints."""
import importlib
import os

import pytest

#: Packages the `test` extra installs: CI must have them, so their tests never skip there.
IN_TEST_EXTRA = {"aesthetic_predictor_v2_5", "pyiqa"}


@pytest.fixture(scope="session")
def package():
    """`package(name)`: the imported module; a skip where it cannot import (a failure under CI=true
    for a package of the test extra, so a broken install is never hidden by a skip)."""
    def load(name):
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            if name in IN_TEST_EXTRA and os.environ.get("CI") == "true":
                pytest.fail(f"{name} is in the test extra but does not import under CI=true: {exc}")
            pytest.skip(f"{name} does not import here ({exc}); its real-path test runs where it does")
    return load


@pytest.fixture(scope="session")
def tiny_siglip(tmp_path_factory):
    """A tiny random SigLIP checkpoint folder (model_type siglip), built once."""
    from vlmjudge.testing import build_tiny_siglip

    return build_tiny_siglip(tmp_path_factory.mktemp("tiny_siglip") / "siglip")
