"""The Image Regeneration Space: upload a reference and a regeneration, get CLIP %, DINO % and the score.

Encoders come from REGENERATION_CLIP_MODEL / REGENERATION_DINO_MODEL (defaults: the public
release's CLIP ViT-B/32 and DINOv2-base) and REGENERATION_POOLING; set VLMJUDGE_MODEL (and
VLMJUDGE_BACKEND, ...) to add an MLLM's content and perceptual ratings.
"""
import os
from dataclasses import replace

from vlmjudge.demo import app_from_env, build_app, unshadow

unshadow(__file__)  # this folder's evaluate script would shadow the package

from regeneration.spec import NO_JUDGE, SPEC  # noqa: E402

config = {key: os.environ[env] for key, env in (("clip_model", "REGENERATION_CLIP_MODEL"),
                                                ("dino_model", "REGENERATION_DINO_MODEL"),
                                                ("pooling", "REGENERATION_POOLING"),
                                                ("device", "VLMJUDGE_DEVICE")) if os.environ.get(env)}
spec = replace(SPEC, config=config)
demo = app_from_env(spec) if os.environ.get("VLMJUDGE_MODEL") else build_app(spec, judge=NO_JUDGE)

if __name__ == "__main__":
    demo.launch()
