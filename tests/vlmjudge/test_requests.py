import numpy as np
import pytest
from PIL import Image

from vlmjudge.requests import Answer, Constraint, Decoding, Request


def red(w=8, h=6):
    return Image.new("RGB", (w, h), (200, 10, 10))


def test_hash_covers_content_but_not_meta():
    base = Request(images=[red()], text="Is it red?", meta={"item_id": 1})
    same = Request(images=[np.array(red())], text="Is it red?", meta={"item_id": 2})
    assert base.content_hash() == same.content_hash()  # same pixels, other container, other meta
    variants = [
        Request(images=[red(9, 6)], text="Is it red?"),
        Request(images=[red()], text="Is it blue?"),
        Request(images=[red()], text="Is it red?", decoding=Decoding(max_new_tokens=3)),
        Request(images=[red()], text="Is it red?", constraint=Constraint.ebnf('root ::= "a"')),
        Request(images=[red()], text="Is it red?", prefix="Answer:"),
        Request(images=[red()], text="Is it red?", system="Be strict."),
    ]
    hashes = {v.content_hash() for v in variants} | {base.content_hash()}
    assert len(hashes) == len(variants) + 1


def test_hash_is_stable_and_schema_property_order_counts():
    schema = {"type": "object", "properties": {"rationale": {"type": "string"}, "answer": {"type": "string"}}}
    flipped = {"type": "object", "properties": {"answer": {"type": "string"}, "rationale": {"type": "string"}}}
    a = Request(images=[red()], text="q", constraint=Constraint.json_schema(schema))
    b = Request(images=[red()], text="q", constraint=Constraint.json_schema(dict(schema)))
    c = Request(images=[red()], text="q", constraint=Constraint.json_schema(flipped))
    assert a.content_hash() == b.content_hash()
    assert a.content_hash() != c.content_hash()  # generation emits properties in schema order
    assert list(a.constraint.schema["properties"]) == ["rationale", "answer"]


def test_request_needs_exactly_one_of_text_or_messages():
    with pytest.raises(ValueError):
        Request(images=[], text=None)
    with pytest.raises(ValueError):
        Request(text="a", messages=[{"role": "user", "content": "b"}])


def test_messages_placeholders_must_match_images():
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]}]
    assert Request(images=[red()], messages=msgs).chat()[0]["role"] == "user"
    with pytest.raises(ValueError, match="placeholders"):
        Request(images=[red(), red()], messages=msgs)


def test_chat_puts_system_first_and_images_before_text():
    chat = Request(images=[red(), red()], text="q", system="rules").chat()
    assert [t["role"] for t in chat] == ["system", "user"]
    assert [p["type"] for p in chat[1]["content"]] == ["image", "image", "text"]


def test_decoding_defaults_to_greedy_and_validates():
    assert Decoding().greedy
    with pytest.raises(ValueError):
        Decoding(max_new_tokens=0)
    with pytest.raises(ValueError):
        Decoding(top_p=0)


def test_constraint_from_pydantic_model():
    from pydantic import BaseModel

    class Verdict(BaseModel):
        answer: str

    c = Constraint.json_schema(Verdict, first_options=["Yes", "No"])
    assert c.schema["properties"]["answer"]["type"] == "string"
    assert c.first_options == ("Yes", "No")
    with pytest.raises(ValueError):
        Constraint.ebnf("  ")


def test_bad_image_in_request_names_its_index():
    from vlmjudge.images import ImageInputError
    r = Request(images=[red(), b"not an image"], text="q")
    with pytest.raises(ImageInputError, match="1"):
        r.content_hash()


def test_answer_json_round_trip():
    a = Answer("Yes.", "length", 3)
    assert Answer.from_json(a.to_json()) == a
    assert not Answer("", "error").ok
