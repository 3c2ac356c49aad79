"""`build_demo_judge`: a tiny random Qwen3-VL judge that gives a mix of outcomes, for trying the
methods offline (`python -m vlmjudge.testing demo DIR`).

A plain random tiny judge answers every long question alike, so TerraVis would call every image
N/A. This checkpoint bakes small logit leans on the option and digit tokens into ordinary weights
(it stays a plain checkpoint for `from_pretrained`): they follow the question's length, answer
labels and three colour statistics of the photo (`demo_vision`); free JSON strings are short
readable checks (`demo_text`). docs/demo-judge.md describes them. They are fitted on probes
made here, in units of the tune photos' spread, never on a method's prompts: the numbers show
the plumbing, not a judgement.
"""
from __future__ import annotations

import os

from .demo_text import TEXT_DIMS, check_tokens, corpus, install_text_dims, set_text_leans, text_units
from .demo_vision import IMAGE_DIMS, PIXEL_BUDGET, VIS_DIM, install_image_path, patch_statistics, reserve_dims
from .tiny_vlm import _PROSE, NO_WORDS, YES_WORDS, build_tiny_vlm

#: Residual dimensions the biases use: the constant every text token holds (as in
#: `build_tiny_vlm`), the marker on turn-opening tokens, the channel the length head writes,
#: and a constant only the tokens that can end an answer label hold.
HELD_DIM, MARKER_DIM, LENGTH_DIM, LABEL_DIM = 0, 1, 2, 3
#: (question tokens, target Yes margin in nats) the length lean is fitted to.
LENGTH_TARGETS = ((700, 5.0), (525, -0.3))
#: Spread of the Yes margin after a label from photo to photo (nats, one tune standard deviation).
IMAGE_SPREAD = 1.2
#: Image leans: (nats per tune standard deviation, direction over the four statistics of
#: `demo_vision`: brightness, red-blue, green, detail). "Yes" after a label (a violation found);
#: lower-case "yes" in JSON answers (a fact holds); "Minor" over "Major"; the centre of the score
#: digits. Each direction is a unit vector whose detail part is the largest, with the sign that
#: makes a blurred or noisy photo (less detail) draw more violations, fewer facts, more "Major"
#: and lower scores.
IMAGE_LEANS = {"yes": (IMAGE_SPREAD, (0.55, 0.3, 0.3, -0.72)), "json_yes": (2.5, (-0.35, 0.55, 0.25, 0.72)),
               "minor": (2.0, (0.0, 0.45, -0.55, 0.7)), "digit": (2.0, (0.5, -0.5, 0.1, 0.7))}
#: Margin of lower-case "yes" over "no" away from a label, at the tune centre (JSON answers).
JSON_YES = 0.0
#: Centre of the score digits at the tune centre, and how sharply they fall off around it (nats).
DIGIT_CENTRE, DIGIT_CURVE = 5.0, 1.0
#: Margin of "Minor" over "Major" after an answer label (nats).
MINOR_LEAN = 2.0
#: How far (nats) "Yes" is held down away from an answer label.
YES_QUIET = 8.0
#: Lean (nats) towards tokens holding a double quote: generated JSON strings stay short.
QUOTE_LEAN = 2.0
_FILLER = " ".join(_PROSE) + " "
#: Vocabulary of the demo tokenizer: the shared tiny corpus plus `demo_text.corpus`'s words.
VOCAB = 3000
#: The assistant prefix the probes end with: an answer label, as the packs write it.
PROBE_PREFIX = "Answer:\n"


def build_demo_judge(path: str | os.PathLike, seed: int = 0) -> str:
    """Write the demo judge to `path` (replaced) and return the path."""
    import torch
    from transformers import AutoProcessor, Qwen3VLForConditionalGeneration
    out = build_tiny_vlm(path, family="qwen3_vl", seed=seed, corpus=corpus(), vocab_size=VOCAB,
                         max_pixels=PIXEL_BUDGET)
    model = Qwen3VLForConditionalGeneration.from_pretrained(out).eval()
    processor = AutoProcessor.from_pretrained(out)
    tok = processor.tokenizer
    ids = _option_ids(tok)
    steps = check_tokens(tok)
    with torch.no_grad():
        install_image_path(model)
        install_text_dims(model, steps)
        _install_label_dim(model, ids["label"])
        _install_length_head(model, tok.convert_tokens_to_ids("<|im_start|>"))
        _equalize_token_norms(_text_model(model).embed_tokens.weight)
        _calibrate(model, processor, ids)
        set_text_leans(model.lm_head.weight, steps, text_units(model, tok))
    model.save_pretrained(out)
    return out


def _option_ids(tok) -> dict[str, list[int]]:
    """Token ids of each option word (bare and after a space) and of the score digits."""
    def forms(word: str) -> list[int]:  # bare then after a space, so two words' forms pair up
        return [tok.encode(f, add_special_tokens=False)[0] for f in (word, " " + word)]
    pairs = [(tok.encode(f + y, add_special_tokens=False)[0], tok.encode(f + n, add_special_tokens=False)[0])
             for y, n in zip(YES_WORDS, NO_WORDS) for f in ("", " ")]
    vocab = [tok.decode([i]) for i in range(len(tok))]
    return {"yes": [y for y, _ in pairs[:2]], "pairs": pairs, "json_yes": [y for y, _ in pairs[2:]],
            "no": forms("no"), "unknown": forms("unknown"), "major": forms("Major"), "minor": forms("Minor"),
            "digits": [tok.convert_tokens_to_ids(str(d)) for d in range(10)],
            "label": [i for i, text in enumerate(vocab) if _is_label_end(text)],
            "quote": [i for i, text in enumerate(vocab) if '"' in text],
            "prefix": [i for i, text in enumerate(vocab) if _is_option_prefix(text)],
            "glued": [i for i, text in enumerate(vocab) if text[:1] == '"' and text[-1:] not in ('"', "")
                      and len(text) > 1]}


def _is_option_prefix(text: str) -> bool:
    """A bare token that only starts a JSON option ("n" of "no", "unk" of "unknown"): a grammar
    lets it through where the whole word is due, and a random logit could pick it."""
    return any(0 < len(text) < len(word) and word.startswith(text) for word in ("yes", "no", "unknown"))


def _is_label_end(text: str) -> bool:
    """A token that can end an answer label: it ends in a colon, or is a line break (packs
    write "Answer:" then a newline, tokenized apart)."""
    return text.endswith(":") or (text.strip() == "" and "\n" in text)


def _text_model(model):
    """The decoder stack of a Qwen3-VL model (embeddings, layers, final norm)."""
    return model.model.language_model


def _install_label_dim(model, label_tokens: list[int]) -> None:
    """LABEL_DIM holds 1 at tokens that can end an answer label and 0 elsewhere; nothing writes
    to it, so the leans read from it act only there."""
    lm = _text_model(model)
    lm.embed_tokens.weight[:, LABEL_DIM] = 0.0
    lm.embed_tokens.weight[label_tokens, LABEL_DIM] = 1.0
    for layer in lm.layers:
        layer.self_attn.o_proj.weight[LABEL_DIM] = 0.0
        layer.mlp.down_proj.weight[LABEL_DIM] = 0.0
    model.lm_head.weight[:, LABEL_DIM] = 0.0


def _install_length_head(model, marker_token: int) -> None:
    """Query head 0 of layer 0 attends evenly to the text tokens and not to the visual ones (so
    it reads the question's length, whatever the image's size); its value reads the marker; its
    output is written only into LENGTH_DIM, which nothing else writes or reads."""
    lm = _text_model(model)
    emb = lm.embed_tokens.weight
    emb[:, MARKER_DIM] = 0.0
    emb[marker_token, MARKER_DIM] = 1.0
    emb[:, LENGTH_DIM] = 0.0
    attn = lm.layers[0].self_attn
    head_dim = attn.head_dim
    slow = head_dim // 2 - 1  # the slowest rotary pair, as the visual head's
    attn.q_proj.weight[:head_dim] = 0.0
    attn.q_proj.weight[slow, HELD_DIM] = 1.0  # one query component; text keys are 0 there
    attn.q_proj.weight[head_dim + slow] = 0.0  # head 1 shares these keys: it ignores that component
    for row in (slow, slow + head_dim // 2):  # key/value head 0: visual keys far below, text keys 0
        attn.k_proj.weight[row] = 0.0
    attn.k_proj.weight[slow, VIS_DIM] = -50.0  # after the key norm this component is all there is: -12 nats
    attn.v_proj.weight[0] = 0.0
    attn.v_proj.weight[0, MARKER_DIM] = 1.0
    reserve_dims(lm, [LENGTH_DIM])
    attn.o_proj.weight[LENGTH_DIM, 0] = 1.0  # head 0, value component 0: small, so the final norm stays linear in it
    model.lm_head.weight[:, LENGTH_DIM] = 0.0


def _equalize_token_norms(embeddings) -> None:
    """Scale each token's embedding (all but the designed dimensions) to one common norm: the
    first layer normalises every position, so the length head then reads the same value from
    every ordinary text token, whatever the words."""
    designed = [HELD_DIM, MARKER_DIM, LENGTH_DIM, LABEL_DIM, VIS_DIM, *IMAGE_DIMS, *TEXT_DIMS]
    others = [i for i in range(embeddings.shape[1]) if i not in designed]
    want = embeddings.pow(2).sum(1).mean()
    fixed = embeddings[:, designed].pow(2).sum(1)
    rest = embeddings[:, others].pow(2).sum(1).clamp(min=1e-12)
    embeddings[:, others] *= ((want - fixed).clamp(min=1e-6) / rest).sqrt()[:, None]


def _probe_inputs(processor, tokens: int, images: list) -> list:
    """Processor inputs for a system turn and a user question of about `tokens` tokens, with
    each image, ending in PROBE_PREFIX."""
    tok = processor.tokenizer
    words = (_FILLER * (tokens // max(1, len(tok.encode(_FILLER))) + 1))
    question = tok.decode(tok.encode(words)[:tokens])
    chat = [{"role": "system", "content": "You judge images."},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) + PROBE_PREFIX
    return [processor(text=[text], images=[image], return_tensors="pt") for image in images]


def _probe_images() -> list:
    """Probe images of the kinds people try: noise, flat colour with shapes, gradients, small
    and photo-sized, so the fit is centred for smooth images as well as for busy ones."""
    import numpy as np
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(2024)
    sizes = [(64, 64), (96, 64), (320, 240), (256, 384), (640, 480), (48, 64), (128, 128), (480, 320)]
    images = []
    for i, (w, h) in enumerate(sizes):
        if i % 3 == 0:
            images.append(Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)))
        elif i % 3 == 1:
            background, shape = (tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(2))
            image = Image.new("RGB", (w, h), background)
            ImageDraw.Draw(image).ellipse([w // 8, h // 8, w // 2, h // 2], fill=shape)
            images.append(image)
        else:
            ramp = np.linspace(0, 255, w)[None, :, None] * np.ones((h, 1, 3))
            ramp[..., i % 3] = 255 - ramp[..., i % 3]
            images.append(Image.fromarray(ramp.astype(np.uint8)))
    return images


def _calibrate(model, processor, ids: dict[str, list[int]]) -> None:
    """Fit the LM head's reads of LABEL_DIM and LENGTH_DIM so the Yes margin after a label
    meets LENGTH_TARGETS on average, and its reads of IMAGE_DIMS so each image lean moves by
    its nats per tune standard deviation; then set the constant leans."""
    import torch
    head = model.lm_head.weight
    images = _probe_images()
    probes = {n: _probe_inputs(processor, n, images) for n, _ in LENGTH_TARGETS}
    for y, n in ids["pairs"]:  # each Yes form reads as its No form: only the designed leans tell them apart
        head[y] = head[n]
    for rows, like in ((ids["minor"], ids["major"]), (ids["unknown"], ids["no"]),
                       (ids["digits"], ids["digits"][:1] * len(ids["digits"]))):
        for row, like_row in zip(rows, like):  # each form reads as the same form of the other word
            head[row] = head[like_row].clone()
    (n1, t1), (n2, t2) = LENGTH_TARGETS
    _center_length_channel(model, _probe_inputs(processor, (n1 + n2) // 2, images))
    h1, h2 = _states(model, probes[n1]), _states(model, probes[n2])
    # margin = a * h[LABEL] + b * h[LENGTH]: two targets, two unknowns
    system = torch.tensor([[h1[:, LABEL_DIM].mean(), h1[:, LENGTH_DIM].mean()],
                           [h2[:, LABEL_DIM].mean(), h2[:, LENGTH_DIM].mean()]], dtype=torch.float64)
    a, b = torch.linalg.solve(system, torch.tensor([t1, t2], dtype=torch.float64)).tolist()
    held = float(h1[:, HELD_DIM].mean())
    label_per_held = float(h1[:, LABEL_DIM].mean()) / held
    quiet = YES_QUIET / held  # away from a label, "Yes" is held down: long free text does not fill with it
    head[ids["yes"], HELD_DIM] = -quiet
    head[ids["yes"], LABEL_DIM] = a + quiet / label_per_held
    head[ids["yes"], LENGTH_DIM] = b
    head[ids["json_yes"], HELD_DIM] = JSON_YES / held
    head[ids["unknown"], HELD_DIM] = -YES_QUIET / 2 / held  # "unknown" trails "no"
    head[ids["minor"], LABEL_DIM] = MINOR_LEAN / float(h2[:, LABEL_DIM].mean())
    head[ids["quote"], HELD_DIM] = QUOTE_LEAN / held
    head[ids["prefix"], HELD_DIM] = -YES_QUIET / held  # JSON options are written as whole words
    # a string opens with a lone quote (not '"}', whose "}" would start the string), so the
    # first word of a check follows it (demo_text)
    head[ids["glued"], HELD_DIM] = -YES_QUIET / held
    per_z = _image_slopes(h1, probes[n1])
    for lean in ("yes", "json_yes", "minor"):
        nats, direction = IMAGE_LEANS[lean]
        head[ids[lean], IMAGE_DIMS[0]:IMAGE_DIMS[-1] + 1] = nats * torch.tensor(direction) / per_z
    nats, direction = IMAGE_LEANS["digit"]  # logit of d: -curve * (d - centre - nats * u.z)^2, up to a constant
    for d, row in enumerate(ids["digits"]):
        head[row, HELD_DIM] = -DIGIT_CURVE * (d - DIGIT_CENTRE) ** 2 / held
        head[row, IMAGE_DIMS[0]:IMAGE_DIMS[-1] + 1] = 2 * DIGIT_CURVE * d * nats * torch.tensor(direction) / per_z


def _image_slopes(states, inputs: list):
    """How far each image dimension of the last state moves per tune standard deviation of its
    statistic (a least-squares slope over the probe images)."""
    import torch
    from .demo_vision import TUNE_CENTRE, TUNE_SCALE
    z = torch.tensor([patch_statistics(x["pixel_values"]) for x in inputs], dtype=torch.float64)
    z = (z - torch.tensor(TUNE_CENTRE, dtype=torch.float64)) / torch.tensor(TUNE_SCALE, dtype=torch.float64)
    h = states[:, list(IMAGE_DIMS)].double()
    zc, hc = z - z.mean(0), h - h.mean(0)
    return ((zc * hc).sum(0) / (zc * zc).sum(0)).float()


def _center_length_channel(model, inputs: list) -> None:
    """Let the length head's value also read the constant every text token holds, weighted so
    the channel is zero on average at the probes' length: the LM head then reads a centred
    signal, and the Yes lean needs no large offset that would amplify small state changes."""
    value = _text_model(model).layers[0].self_attn.v_proj.weight
    value[0, HELD_DIM] = 0.0
    at_zero = _states(model, inputs)[:, LENGTH_DIM].mean()
    value[0, HELD_DIM] = 1.0
    at_one = _states(model, inputs)[:, LENGTH_DIM].mean()
    value[0, HELD_DIM] = float(at_zero / (at_zero - at_one))


def _states(model, inputs: list):
    """The LM head's input at the last position, one row per probe."""
    import torch
    seen = []
    hook = model.lm_head.register_forward_hook(lambda mod, args, out: seen.append(args[0][0, -1]))
    try:
        for x in inputs:
            model(**x)
    finally:
        hook.remove()
    return torch.stack(seen)
