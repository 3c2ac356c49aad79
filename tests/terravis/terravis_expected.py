"""Expected TerraVis records of the replay tests, as the dicts `ImageRecord.to_dict()` gives (a
uniquely named helper: test folders are on one pythonpath)."""


def expected_record(image_id, variant="workflow", **changes):
    """The record dict of a scored image with no checks and the default weights, with `changes`."""
    out = {"id": image_id, "variant": variant, "status": "scored", "score": None, "eligible": None,
           "eligibility_prob": None, "eligibility_reason": None, "eligibility_parse_ok": True, "checks": [],
           "n_major": 0, "n_minor": 0, "rating": None, "rating_probs": None, "low_mass": [], "errors": [],
           "parse_failures": 0,
           "retries": 0, "lam": 1.0, "alpha": 0.5, "meta": {}, "valid": False}
    out.update(changes)
    return out
