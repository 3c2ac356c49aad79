"""`vlmjudge benchmark`: many text-to-image models, every method, one leaderboard.

The prompts come from `suites/`: named public prompt sets (GenAI-Bench, DrawBench, PartiPrompts,
TIFA v1.0, COCO captions, FAGER's and Image Regeneration's sets) and your own CSV or JSONL file,
each read into one `PromptSuite` with its ids, prompts, category tags and card facts.
"""
