"""Build script beside setup.cfg (which holds the metadata): ship the repo-root metrics/ folders.

metrics/<name>/ stays at the repository root, where evaluate and Spaces expect a module folder, and is
packaged as `vlmjudge.metric_modules`, so that an installed vlmjudge (a wheel, or an editable install)
finds its evaluate modules and Space apps through importlib.resources.
"""
from setuptools import find_packages, setup

PACKAGES = ["vlmjudge", "terravis", "viescore2", "fager", "regeneration", "t2ibaselines"]

setup(
    packages=find_packages(include=[p for name in PACKAGES for p in (name, f"{name}.*")])
    + ["vlmjudge.metric_modules"],
    package_dir={"vlmjudge.metric_modules": "metrics"},
    package_data={"": ["*.json", "*.yaml", "*.txt", "*.ebnf", "*.md", "packs/*.json"],
                  "vlmjudge.metric_modules": ["*/*.py", "*/*.md", "*/*.txt", "*/examples/*"]},
)
