"""A row whose cancel flag (`Request.meta[CANCEL_META_KEY]`) is set stops at its next token: the
transformers backend's row control, and the flag reaching its row plan."""
import threading

import pytest

from vlmjudge import Request
from vlmjudge.requests import CANCEL_META_KEY


def test_row_control_closes_a_cancelled_row_at_the_next_token():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from vlmjudge.backends.hf.decoding.row_control import RowControl, RowPlan

    class _Tokenizer:
        def decode(self, ids, skip_special_tokens=True):
            return "".join(chr(97 + int(i) % 26) for i in ids)

    gone = threading.Event()
    plans = [RowPlan(max_new_tokens=10, cancelled=gone.is_set), RowPlan(max_new_tokens=10)]
    control = RowControl(plans, prompt_len=0, eos_ids=[99], tokenizer=_Tokenizer(), vocab_size=100)
    ids = torch.tensor([[1], [2]])
    assert control.after_token(ids).tolist() == [False, False]
    gone.set()
    ids = torch.tensor([[1, 3], [2, 4]])
    assert control.after_token(ids).tolist() == [True, False]  # the very next token closes it
    assert control.finish(ids) == [("", "error", 2), ("ce", "length", 2)]


def test_the_transformers_backend_passes_the_cancel_flag_to_its_row_plan():
    pytest.importorskip("transformers")
    from vlmjudge.backends.hf.judge import TransformersJudge

    flag = threading.Event().is_set
    request = Request(text="hi", meta={CANCEL_META_KEY: flag})
    plan = TransformersJudge.__new__(TransformersJudge)._plan(request, "hi")
    assert plan.cancelled is flag
