"""The named suites (`SUITES`: name -> where it is published, how its files are read, its card) and
`load_suite`, which fetches a suite once into the Hugging Face caches or reads a local copy.

A download is checked against the card's size, so a source that changed under its name is refused
instead of benchmarked; a local copy (`suite_file`) may hold any part of the suite.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import method_sets, published
from .sources import HubFile, WebFile, fetch
from .suite import PromptSuite, SuiteFormatError, SuitePrompt, SuiteUnavailableError, UnknownSuiteError


@dataclass(frozen=True)
class Subset:
    """One published part of a suite: its files (by role), its size, and a line saying where it is."""

    files: Mapping[str, HubFile | WebFile]
    size: int | None
    source: str


@dataclass(frozen=True)
class SuiteSpec:
    """How to load one named suite: its subsets, how to read its files (`read(paths, subset,
    published_copy)`), how to find them in a local copy, and the card's facts (licence, citation,
    what its category tags are)."""

    name: str
    subsets: Mapping[str, Subset]
    read: Callable[[Mapping[str, Path], str, bool], list[SuitePrompt]]
    locate: Callable[[Path], Mapping[str, Path]]
    license: str
    citation: str
    tags: str
    default_subset: str = ""
    published: bool = True
    subset_of: Callable[[str], Subset | None] | None = field(default=None, repr=False)

    def subset(self, name: str | None) -> tuple[str, Subset]:
        """The subset asked for (case aside), or the default one."""
        wanted = self.default_subset if name is None else str(name).strip()
        for key, subset in self.subsets.items():
            if key.lower() == wanted.lower():
                return key, subset
        extra = self.subset_of(wanted) if self.subset_of else None
        if extra is not None:
            return wanted, extra
        raise UnknownSuiteError(f"suite {self.name!r} has no subset {wanted!r}; its subsets: {', '.join(self.subsets)}")


def _gh(repo: str, commit: str, path: str) -> WebFile:
    return WebFile(f"https://raw.githubusercontent.com/{repo}/{commit}/{path}")


_TIFA = _gh("Yushi-Hu/tifa", "8e37050f44ab4ee681e4251f3c8a9d4cc86e901e", "tifa_v1.0/tifa_v1.0_text_inputs.json")
_PARTI = _gh("google-research/parti", "5a657978134374ce28973948331b319adef164bd", "PartiPrompts.tsv")
_FAGER_COMMIT = "9372d55e37012b20e07d54eb17ef621779e8ff22"
_DRAWBENCH = HubFile("sayakpaul/drawbench", "DrawBench Prompts - Sheet1.csv", "ad794cba698c253ffdb6d18eff3fc87b004c1135")
_COCO = HubFile("yerevann/coco-karpathy", "data/test-00000-of-00001.parquet")
#: Images in the Karpathy test split, which the COCO draw samples from.
COCO_TEST_IMAGES = 5000


def _genai(repo: str, size: int) -> Subset:
    files = {"prompts": HubFile(repo, "genai_image.json"), "skills": HubFile(repo, "genai_skills.json")}
    return Subset(files, size, f"Hugging Face dataset {repo} (genai_image.json, genai_skills.json)")


def _fager(folder: str, size: int, roles: tuple[str, ...]) -> Subset:
    names = {"prompts": "prompts.csv", **method_sets.FAGER_FILES}
    files = {role: _gh("SGT-LIM/FAGER", _FAGER_COMMIT, f"data/{folder}/{names[role]}") for role in roles}
    return Subset(files, size, f"FAGER's repository, data/{folder} (github.com/SGT-LIM/FAGER)")


def _coco_subset(name: str) -> Subset | None:
    """Any whole number of COCO images beside the named subsets (``subset="50"``)."""
    if not name.isdigit() or int(name) < 1:
        return None
    return Subset({"rows": _COCO}, int(name), f"{int(name)} images drawn from the Karpathy test split "
                                                 "(Hugging Face dataset yerevann/coco-karpathy)")


def _read_coco(paths: Mapping[str, Path], subset: str, published_copy: bool) -> list[SuitePrompt]:
    rows = published.read_coco_rows(paths["rows"])
    if published_copy and len(rows) != COCO_TEST_IMAGES:
        raise SuiteFormatError(f"{paths['rows']}: the Karpathy test split has {COCO_TEST_IMAGES} images, "
                               f"this copy {len(rows)}; the source changed")
    return published.draw_coco(rows, None if subset == "all" else int(subset))


#: The published prompt suites `load_suite` knows, by name.
SUITES: dict[str, SuiteSpec] = {spec.name: spec for spec in (
    SuiteSpec(
        "genai-bench", {"1600": _genai("BaiqiL/GenAI-Bench-1600", 1600), "527": _genai("zhiqiulin/GenAI-Bench-527", 527)},
        lambda paths, subset, _: published.read_genai_bench(paths["prompts"], paths["skills"]), published.genai_files,
        "Apache-2.0 (GenAI-Bench's dataset card)",
        "Li, Lin, Pathak et al., GenAI-Bench: Evaluating and Improving Compositional Text-to-Visual Generation, "
        "arXiv:2406.13743 (2024); the 527 subset: Lin et al., Evaluating Text-to-Visual Generation with "
        "Image-to-Text Generation (VQAScore), ECCV 2024",
        "skill (attribute, scene, spatial/action/part relation, counting, comparison, differentiation, negation, "
        "universal) and level (basic, advanced)", default_subset="1600"),
    SuiteSpec(
        "drawbench", {"all": Subset({"csv": _DRAWBENCH}, 200, "Hugging Face dataset sayakpaul/drawbench "
                                    "(the DrawBench sheet as CSV)")},
        lambda paths, subset, _: published.read_drawbench(paths["csv"]),
        lambda path: {"csv": published.locate(path, (_DRAWBENCH.path,), "drawbench")},
        "none stated by its authors (Imagen); check before redistributing",
        "Saharia et al., Photorealistic Text-to-Image Diffusion Models with Deep Language Understanding "
        "(Imagen), NeurIPS 2022, arXiv:2205.11487",
        "category (11: Colors, Conflicting, Counting, DALL-E, Descriptions, Gary Marcus et al., Misspellings, "
        "Positional, Rare Words, Reddit, Text)", default_subset="all"),
    SuiteSpec(
        "partiprompts", {"all": Subset({"tsv": _PARTI}, 1632, "PartiPrompts.tsv of github.com/google-research/parti")},
        lambda paths, subset, _: published.read_partiprompts(paths["tsv"]),
        lambda path: {"tsv": published.locate(path, ("PartiPrompts.tsv",), "partiprompts")},
        "Apache-2.0",
        "Yu et al., Scaling Autoregressive Models for Content-Rich Text-to-Image Generation (Parti), "
        "TMLR 2022, arXiv:2206.10789",
        "category (12, e.g. Animals, World Knowledge) and challenge (11, e.g. Basic, Quantity)", default_subset="all"),
    SuiteSpec(
        "tifa-v1", {"all": Subset({"json": _TIFA}, 4081, "tifa_v1.0_text_inputs.json of github.com/Yushi-Hu/tifa")},
        lambda paths, subset, _: published.read_tifa(paths["json"]),
        lambda path: {"json": published.locate(path, ("tifa_v1.0_text_inputs.json",
                                                      "tifa_v1.0/tifa_v1.0_text_inputs.json"), "tifa-v1")},
        "Apache-2.0",
        "Hu et al., TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question "
        "Answering, ICCV 2023, arXiv:2303.11897",
        "source (coco, partiprompt, paintskill, drawbench)", default_subset="all"),
    SuiteSpec(
        "coco-captions", {"200": _coco_subset("200"), "all": Subset({"rows": _COCO}, COCO_TEST_IMAGES,
                                                                   "the Karpathy test split, one caption per image")},
        _read_coco,
        lambda path: {"rows": published.locate(path, (_COCO.path, Path(_COCO.path).name), "coco-captions")},
        "CC BY 4.0 (COCO annotations)",
        "Chen et al., Microsoft COCO Captions: Data Collection and Evaluation Server, arXiv:1504.00325; "
        "the split: Karpathy and Fei-Fei, Deep Visual-Semantic Alignments, CVPR 2015",
        "none", default_subset="200", subset_of=_coco_subset),
    SuiteSpec(
        "fager", {"abo": _fager("ABO", 50, ("prompts", "exclude", "manifest", "qa")),
                  "culture": _fager("culture", 30, ("prompts", "manifest", "qa"))},
        lambda paths, subset, _: method_sets.read_fager(paths), method_sets.fager_files,
        "MIT (FAGER's release); ABO's product images are ABO's own (CC BY-NC 4.0)",
        "Lim, Ham, Chen and Ghadiyaram, FAGER: Factually Grounded Evaluation and Refinement of Text-to-Image "
        "Models, CVPR Workshops 2026, arXiv:2605.19111",
        "brand (ABO)", default_subset="abo"),
    SuiteSpec(
        "regeneration", {"references": Subset({}, None, "not published: a folder of your reference images")},
        lambda paths, subset, _: method_sets.read_regeneration(paths), method_sets.regeneration_files,
        "yours", "Image Regeneration: Evaluating Text-to-Image Model via Generating Identical Image with "
        "Multimodal Large Language Models", "category (the subfolder an image sits in)",
        default_subset="references", published=False),
)}


def load_suite(name: str, *, suite_file: str | os.PathLike | None = None, subset: str | None = None,
               cache_dir: str | os.PathLike | None = None) -> PromptSuite:
    """A named suite: from `suite_file` (a local copy of the published file or folder) when given,
    else from its public source through the Hugging Face caches (`cache_dir` overrides theirs).

    Examples:
        >>> load_suite("sdxl-bench")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.UnknownSuiteError: no suite 'sdxl-bench'; the suites: genai-bench, drawbench, partiprompts, tifa-v1, coco-captions, fager, regeneration (or --prompts FILE for your own)
    """
    spec = SUITES.get(str(name).strip().lower())
    if spec is None:
        raise UnknownSuiteError(f"no suite {name!r}; the suites: {', '.join(SUITES)} (or --prompts FILE for your own)")
    subset_name, chosen = spec.subset(subset)
    if suite_file is not None:
        paths = dict(spec.locate(Path(os.path.expanduser(str(suite_file)))))
        origin = str(suite_file)
        prompts = spec.read(paths, subset_name, False)
    elif not spec.published:
        raise SuiteUnavailableError(f"suite {spec.name!r}: its sets are not published; pass --suite-file PATH "
                                    "(suite_file=) with a folder of reference images")
    else:
        paths = {role: fetch(file, spec.name, cache_dir) for role, file in chosen.files.items()}
        origin = chosen.source
        prompts = spec.read(paths, subset_name, True)
        if chosen.size is not None and len(prompts) != chosen.size:
            raise SuiteFormatError(f"suite {spec.name!r}: {chosen.source} holds {len(prompts)} prompts, its card "
                                   f"{chosen.size}; the source changed (pass --suite-file to use it as it is)")
    return PromptSuite(spec.name, prompts, source=chosen.source, license=spec.license, citation=spec.citation,
                       size=chosen.size, subset=subset_name, origin=origin,
                       files={role: str(path) for role, path in paths.items()})
