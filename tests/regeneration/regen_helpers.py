"""Shared test helpers: scripted judge answers keyed by the package's meta keys, a toy generator."""
from __future__ import annotations

import hashlib
import json

import numpy as np
from PIL import Image

from regeneration.asking import META_KEYS
from vlmjudge import load_judge


def reference_images(n: int, size: int = 32) -> dict[str, Image.Image]:
    """Distinct deterministic references: colour blocks with a stripe."""
    out = {}
    for k in range(n):
        rng = np.random.RandomState(100 + k)
        arr = np.zeros((size, size, 3), dtype=np.uint8)
        arr[:] = rng.randint(0, 256, size=3)
        arr[size // 4: size // 2, :, :] = rng.randint(0, 256, size=3)
        out[f"ref{k}"] = Image.fromarray(arr)
    return out


def caption_json(item: str) -> str:
    return json.dumps({"description": f"a cat on a sofa ({item})",
                       "global_features": {"style": "photo", "lighting": "soft daylight",
                                           "color_palette": "orange and grey", "composition": "centered"}})


OBJECTS = {"objects": [{"name": "cat", "type": "animal"}, {"name": "sofa", "type": "object"}]}
CAT = {"color": "orange", "material": "fur", "position": "center", "texture": "fluffy", "species": "tabby cat",
       "posture": "lying"}
SOFA = {"color": "grey", "material": "fabric", "position": "below", "texture": "soft", "function": "seat",
        "state": "none"}
RELATIONS = {"relationships": [{"subject": "cat", "relation": "lies on", "object": "sofa"}]}


def exact_prompt(item: str, round: int) -> str:
    return f"EXACT {item} round {round}"


def iut_answers(items, objects=OBJECTS) -> dict:
    """Replay answers for the four IUT stages of each item: caption, objects, one attribute answer
    per object (a cat, then a sofa), relations."""
    ans = {}
    for item in items:
        ans[("iut_caption", item, 0, 0)] = caption_json(item)
        ans[("iut_objects", item, 0, 0)] = json.dumps(objects)
        ans[("iut_attributes", item, 0, 0)] = json.dumps(CAT)
        ans[("iut_attributes", item, 0, 1)] = json.dumps(SOFA)
        ans[("iut_relations", item, 0, 0)] = json.dumps(RELATIONS)
    return ans


def loop_answers(items, rounds: int, n: int, exact_at=lambda item, t: (t - 1) % 3, final: bool = True) -> dict:
    """Replay answers for a full IUT-mode loop; in round t the prompt at `exact_at(item, t)` is the
    one the toy generator turns into the reference itself."""
    ans = iut_answers(items)
    for item in items:
        ans[("initial_prompt", item, 0, 0)] = json.dumps({"prompt": f"an orange cat lying on a grey sofa {item}"})
        for t in range(1, rounds + 1):
            prompts = [f"variant {k} of {item} in round {t}" for k in range(n)]
            prompts[exact_at(item, t)] = exact_prompt(item, t)
            stage = "variants" if t == 1 else "revision"
            ans[(stage, item, t, 0)] = json.dumps({"prompts": prompts})
            if t < rounds:
                ans[("feedback", item, t, 0)] = json.dumps({"differences": ["the sofa is darker"],
                                                            "instruction": "make the sofa lighter"})
        if final:
            ans[("content", item, rounds + 1, 0)] = json.dumps({"reason": "same scene", "score": 5})
            ans[("perceptual", item, rounds + 1, 0)] = json.dumps({"reason": "clean", "score": 4})
    return ans


def replay(answers: dict):
    return load_judge(answers, backend="replay", key_fields=META_KEYS)


class ToyGenerator:
    """Deterministic: a prompt 'EXACT <item> ...' gives that reference pixel for pixel; any other
    prompt gives seeded noise. Counts every image it makes; can fail after a number of images."""

    name = "toy"

    def __init__(self, references: dict[str, Image.Image], fail_after: int | None = None) -> None:
        self.references = references
        self.calls: list[tuple[str, int]] = []
        self.fail_after = fail_after

    def __call__(self, prompts, seeds):
        out = []
        for prompt, seed in zip(prompts, seeds):
            if self.fail_after is not None and len(self.calls) >= self.fail_after:
                raise KeyboardInterrupt("simulated kill")
            self.calls.append((prompt, seed))
            if prompt.startswith("EXACT "):
                out.append(self.references[prompt.split()[1]].copy())
            else:
                out.extend(noise_generate([prompt], [seed]))
        return out


class MetaReplayJudge:
    """A replay judge keyed on the package's meta keys, loadable as a backend by 'module:Class'."""

    def __new__(cls, answers, **kwargs):
        return load_judge(answers, backend="replay", key_fields=META_KEYS, **kwargs)


def noise_generate(prompts, seeds):
    """A module-level generator for `module:callable` specs: seeded noise per (prompt, seed)."""
    out = []
    for prompt, seed in zip(prompts, seeds):
        digest = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
        rng = np.random.RandomState((seed * 7919 + digest) % 2**32)
        out.append(Image.fromarray(rng.randint(0, 256, size=(32, 32, 3), dtype=np.uint8)))
    return out


def write_answers_jsonl(answers: dict, path) -> str:
    """Replay answers keyed by META_KEYS as a JSONL file (for the CLI and evaluate module)."""
    with open(path, "w", encoding="utf-8") as fh:
        for key, value in answers.items():
            row = {"meta": dict(zip(META_KEYS, key))}
            row.update({"finish_reason": "error"} if value is None else {"text": value})
            fh.write(json.dumps(row) + "\n")
    return str(path)


def run_cli(argv: list[str]) -> int:
    """Run `vlmjudge regeneration ARGV` through the method's own parser; its exit status."""
    import argparse

    from regeneration.cli import configure
    parser = argparse.ArgumentParser(prog="vlmjudge regeneration")
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)
