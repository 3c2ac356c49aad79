"""Image Regeneration against its release (SPEEDSRER/Image-Regeneration): one test per corpus line of
tests/data/golden/regeneration, each through this project's public functions."""
from regeneration.evaluation.benchmark import release_summary
from regeneration.config import LoopConfig
from regeneration.scoring import final_pick, select
from regeneration.parsing import JSONReadError, extract_json, prompt_variants

from .replay import golden_test, number


def _iut_step(inp: dict) -> dict:
    """The JSON of one IUT step, read with the project's default reading."""
    try:
        return {"object": extract_json(inp["response"])}
    except JSONReadError as exc:
        return {"error": type(exc).__name__}


def _variants(inp: dict) -> dict:
    try:
        return {"prompts": prompt_variants(inp["response"])}
    except JSONReadError as exc:
        return {"error": type(exc).__name__}


def _selection(inp: dict) -> dict:
    """Each round's winner under the default selection weights, then the default final pick."""
    weights = LoopConfig().weight_map
    per_round, winners = [], []
    try:
        for candidates in inp["rounds"]:
            scored = [{"clip": number(c["clip"]), "dino": number(c["dinov2"])} for c in candidates]
            best, totals = select(scored, weights)
            winner = {"clip": scored[best]["clip"], "dinov2": scored[best]["dino"], "total": totals[best]}
            per_round.append({"totals": totals, "best_index": best, "best": winner})
            winners.append({**winner, "combined": totals[best]})
    except ValueError as exc:
        return {"error": type(exc).__name__}
    final = winners[final_pick(winners, LoopConfig().final)]
    return {"per_round": per_round, "final": {"clip_score": final["clip"], "dinov2_score": final["dinov2"]}}


def _aggregate(inp: dict) -> dict:
    try:
        return release_summary(inp["results"])
    except ValueError as exc:
        return {"error": type(exc).__name__}


test_parse_iut_json = golden_test(
    "regeneration/parse_iut_json", _iut_step,
    "Every JSON step of the IUT: first `{` to last `}`, strict JSON; no object is the documented error.")

test_parse_prompt_variants = golden_test(
    "regeneration/parse_prompt_variants", _variants,
    "The `prompts` value of a variants answer, as written.")

test_select_candidate = golden_test(
    "regeneration/select_candidate", _selection,
    "0.5 CLIP + 0.5 DINOv2 picks each round's winner (first on ties); the last round's is final.")

test_aggregate_metrics = golden_test(
    "regeneration/aggregate_metrics", _aggregate,
    "Means over images of the release's per-image records.")
