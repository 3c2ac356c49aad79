"""A toy evaluate module that scores images with any registered method as they are added and
stores only the records (vlmjudge.faces.store_scored_rows): the pattern for metrics/ modules."""
import json

import datasets
import evaluate

from vlmjudge.distributed import resolve_method, score_records
from vlmjudge.faces import store_scored_rows

STORED = datasets.Features({"record": datasets.Value("string")})


class ToyScoreOnAdd(evaluate.Metric):
    """Mean score of a method's records; images scored in add_batch by this process's judge."""

    def __init__(self, *args, method="terravis", judge=None, model=None, judge_kwargs=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = resolve_method(method)
        if judge is None:
            from vlmjudge.judge import load_judge
            judge = load_judge(model, backend="transformers", **dict(judge_kwargs or {}))
        self.judge = judge

    def _info(self):
        return evaluate.MetricInfo(description="toy", citation="", inputs_description="",
                                   features=datasets.Features({"images": datasets.Value("string")}))

    def _feature_names(self):
        return list(STORED)

    def add_batch(self, *, images):
        """Score the images now with this process's judge; store only their records."""
        records = score_records(self.method, {"image": list(images)}, judge=self.judge)
        store_scored_rows(self, STORED, {"record": [json.dumps(r) for r in records]})

    def _compute(self, record):
        records = [json.loads(r) for r in record]
        scores = [r["score"] for r in records]
        return {"mean": sum(scores) / len(scores), "scores": scores}
