"""The transformers backend's option probabilities follow `vlmjudge.options` on every tokenizer:
the option as the next word, a form of several tokens scored whole under teacher forcing
(ratings 1-5 on a Qwen tokenizer, which writes " 1" as " " then "1"), the mass kept beside."""
import pytest
from PIL import Image

from vlmjudge import load_judge
from vlmjudge.backends.hf.preparation import RequestPreparation
from vlmjudge.backends.hf.tokens import TokenIds
from vlmjudge.options import single_token_ids
from vlmjudge.requests import Request

RATINGS = ["1", "2", "3", "4", "5"]


def _softmax_after(judge, text, image):
    """The next-token distribution after a prompt text, from the model's own forward."""
    import torch
    inputs = judge.processor(text=[text], images=[image], return_tensors="pt")
    with torch.inference_mode():
        return torch.softmax(judge.model(**inputs).logits[0, -1].float(), dim=-1)


def test_ratings_on_a_qwen_tokenizer_are_scored_whole(tiny_vlm_path):
    judge = load_judge(tiny_vlm_path(), device="cpu", batch_size=4)
    tok = judge.tokenizer
    assert tok.convert_ids_to_tokens(tok.encode("Answer: 1", add_special_tokens=False))[-2:] == ["Ġ", "1"]
    image = Image.new("RGB", (40, 40), (30, 160, 60))
    request = Request(images=[image], text="Rate the image from 1 to 5.", prefix="Answer:")
    raw = judge.choice_probs([request], RATINGS, normalize=False)[0]
    probs = judge.choice_probs([request], RATINGS)[0]
    text = judge.prompt_text(request)
    first, after_space = _softmax_after(judge, text, image), _softmax_after(judge, text + " ", image)
    space = tok.convert_tokens_to_ids("Ġ")
    for option in RATINGS:
        digit = tok.convert_tokens_to_ids(option)
        by_hand = first[space].item() * after_space[digit].item()
        assert raw[option] == pytest.approx(by_hand, rel=1e-3)
        assert probs[option] == pytest.approx(by_hand / raw.mass, rel=1e-3)
    assert raw.mass == pytest.approx(sum(raw.values())) and probs.mass == pytest.approx(raw.mass, rel=1e-4)
    assert not probs.truncated and probs.low_mass == (probs.mass < 0.5)


def _metaspace_tokenizer():
    """A sentencepiece-style tokenizer (Llama, Gemma, Mistral: "▁" marks a word start) trained here."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    corpus = ["Answer: Yes it is. No it is not. Nope. Rating: 4 of 5. 1 2 3 4 5"] * 50 + ["Is it a photo?"] * 20
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=90, special_tokens=["<unk>", "<s>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>")


class _Preparation(RequestPreparation):
    """The request side of the transformers judge around a tokenizer alone (no model)."""

    def __init__(self, tokenizer):
        self.tokenizer, self._option_cache, self._token_ids = tokenizer, {}, TokenIds(tokenizer)


def test_a_sentencepiece_tokenizer_writes_each_form_and_feeds_its_leading_tokens_back():
    prep = _Preparation(_metaspace_tokenizer())
    prompt = "<s>user Is it a photo? assistant Answer:"
    seqs = prep.option_sequences(prompt, ["Yes", "Nope", "Absolutely"])
    pieces = {o: prep.tokenizer.convert_ids_to_tokens(list(s)) for o, s in seqs.items()}
    assert pieces["Yes"] == ["▁Yes"] and pieces["Absolutely"][0].startswith("▁")
    longer = [s for s in seqs.values() if len(s) > 1]
    assert longer, pieces  # the tiny vocabulary splits some form: its leading tokens are fed back
    for seq in longer:
        for k in range(1, len(seq)):
            written = prep.extension(prompt, seq[:k])
            assert written.startswith(" ") and prep._token_ids(prompt + written)[-k:] == seq[:k]
    with pytest.raises(ValueError, match="begins another"):
        prep.option_sequences(prompt, ["No", "Nope"])


def test_single_token_ids_are_the_forms_one_token_and_refuse_longer_or_shared_forms():
    tok = _metaspace_tokenizer()
    prep = _Preparation(tok)
    seqs = prep.option_sequences("Answer:", ["Yes", "No"])
    assert single_token_ids(tok, "Answer:", ["Yes", "No"]) == [seqs["Yes"][0], seqs["No"][0]]
    assert prep.option_ids("Answer:", ["Yes", "No"]) == single_token_ids(tok, "Answer:", ["Yes", "No"])
    with pytest.raises(ValueError, match="not a single token"):  # "Yes" after a newline is two pieces here
        single_token_ids(tok, "Answer:\n", ["Yes"])
    long = next(o for o in ("Absolutely", "Nope", "photograph") if len(prep.option_sequences("Answer:", [o])[o]) > 1)
    with pytest.raises(ValueError, match="not a single token"):
        single_token_ids(tok, "Answer:", ["Yes", long])
    with pytest.raises(ValueError, match="share token ids"):
        single_token_ids(tok, "Answer:", ["Yes", "Yes"])
