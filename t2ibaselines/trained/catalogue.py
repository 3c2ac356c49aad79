"""Which trained scorer lives where, which extra installs it and whether it is installed now.

For listings (`vlmjudge info`, the docs table) without loading any model or torch: a scorer module
imports only the light shared modules until its scorer is built, so reading its `EXTRA` and
`REQUIRES` is cheap, and "installed" means every required module can be found.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec

#: method name -> (module, the name of its MethodSpec there), as setup.cfg registers them.
SCORERS: dict[str, tuple[str, str]] = {
    "clipscore": ("t2ibaselines.trained.clipscore", "SPEC"),
    "pickscore": ("t2ibaselines.trained.pickscore", "SPEC"),
    "hpsv2": ("t2ibaselines.trained.hps", "SPEC"),
    "imagereward": ("t2ibaselines.trained.imagereward", "SPEC"),
    "aesthetic": ("t2ibaselines.trained.aesthetic", "SPEC"),
    "musiq": ("t2ibaselines.trained.iqa", "MUSIQ_SPEC"),
    "niqe": ("t2ibaselines.trained.iqa", "NIQE_SPEC"),
    "brisque": ("t2ibaselines.trained.iqa", "BRISQUE_SPEC"),
    "lpips": ("t2ibaselines.trained.lpips", "SPEC"),
}


@dataclass(frozen=True)
class Requirement:
    """What a scorer needs: the extra that installs it (None: vlmjudge's own dependencies) and the
    modules that must import."""
    method: str
    extra: str | None
    requires: tuple[str, ...]

    @property
    def installed(self) -> bool:
        """Whether every required module can be found (found is not imported: see the docs for
        packages that install but do not import here)."""
        return all(_findable(module) for module in self.requires)


def _findable(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False


def requirement(method: str) -> Requirement:
    """The extra and modules of one trained scorer.

    Examples:
        >>> requirement("musiq").extra, requirement("musiq").requires
        ('iqa', ('pyiqa',))
        >>> requirement("lpips").extra is None
        True
    """
    if method not in SCORERS:
        raise KeyError(f"no trained scorer {method!r}; these are {sorted(SCORERS)}")
    module = import_module(SCORERS[method][0])
    return Requirement(method, module.EXTRA, tuple(module.REQUIRES))
