"""The demo judge's free text: short checks a person can read, such as "Colours right?".

A random tiny model fills a free JSON string with sub-word fragments, and a plain lean towards
whole words makes it repeat one word to the length limit. Here the tokenizer holds a few
hundred whole words (`CORPUS`), and the LM head reads designed residual dimensions of the
current token: a string's opening quote leads to one of `CHECKS`' first words, a first word to
its second word, the second word to "?" and "?" to the closing quote. One layer-1 head counts
the first words already written (their share of all first words in the context), and the LM
head pushes used ones down, so the strings of one answer cycle through the checks instead of
repeating one. The checks do not copy the user's prompt: a 64-wide model has no room for that.
"""
from __future__ import annotations

from .demo_vision import IMAGE_DIMS

#: (first word, second word) of each check, in the order a fresh answer writes them.
CHECKS = (("Subject", "present"), ("Colours", "right"), ("Shapes", "correct"), ("Count", "matches"),
          ("Layout", "plausible"), ("Sizes", "consistent"), ("Posture", "natural"), ("Scene", "fits"),
          ("Details", "visible"), ("Lighting", "believable"))
#: Residual dimensions: 1 at tokens that end in a double quote; 1 at the i-th first word; 1 at
#: any second word; 1 at "?"; the share of each first word among those already written.
OPEN_DIM = IMAGE_DIMS[-1] + 1
FIRST_DIMS = tuple(range(OPEN_DIM + 1, OPEN_DIM + 1 + len(CHECKS)))
SECOND_DIM, MARK_DIM = FIRST_DIMS[-1] + 1, FIRST_DIMS[-1] + 2
USED_DIMS = tuple(range(MARK_DIM + 1, MARK_DIM + 1 + len(CHECKS)))
TEXT_DIMS = (OPEN_DIM, *FIRST_DIMS, SECOND_DIM, MARK_DIM, *USED_DIMS)
#: Lean (nats) of each designed next token; the random logits spread by a few nats.
STEP_LEAN = 14.0
#: Push-down (nats) of a first word that makes up all first words written so far.
USED_PUSH = 40.0
#: Lean (nats) towards closing a list, against opening one with a string, once checks are
#: written, grown by how many (`set_text_leans`): a rubric holds a few facts, not 27.
EMPTY_LEAN = 8.0
#: Each later check starts this much lower (nats), so unused checks are never exactly tied.
ORDER_STEP = 0.3
#: Extra lead (nats) of the first check when no check is written yet: the list-closing lean
#: counts checks through the first check's share, so an answer must start with it.
FIRST_LEAD = 4.0
#: Query/key gain of the counting head: first words outscore other tokens by about 20 nats.
_KEY_GAIN = 3.0

_WORDS = """the a an and or of to in on at by for with from as is are was be been it its this that these those
there here what which who how when where why not no yes all any each every some many few more most one two three
four five six seven eight nine ten first second third image images photo picture prompt fact facts question
questions answer answers check checks object objects subject main scene background foreground colour colours color
colors shape shapes size sizes count counts number position left right top bottom middle front behind under over
above below near next inside outside small large big tall short long wide round square red green blue yellow white
black brown orange purple pink grey gray light dark bright clear visible present absent correct wrong true false
plausible natural consistent believable matches fits details lighting layout posture person people man woman child
dog cat bird horse fish tree flower grass sky sun cloud water sea river beach mountain road street car bus bike
house building room table chair cup plate bowl apple apples fruit food book window door wall floor snow rain ice
fox animal text word letter sign level_1 level_2 level_3 existence counting relation others importance high medium
low verified_rubric dropped added reason rationale status summary visual_elements confidence notes ok partial
not_necessary not_visually_verifiable malformed missing_necessary_fact constraint instruction score scores
reasoning explanation severity evidence"""


def corpus() -> tuple[str, ...]:
    """Texts the demo tokenizer is trained on besides the shared tiny corpus: each word bare,
    capitalised and after a space, the checks as JSON strings, and the JSON punctuation."""
    words = _WORDS.split() + [w for pair in CHECKS for w in pair]
    forms = [f for w in words for f in (w, " " + w, w.capitalize(), " " + w.capitalize())]
    checks = [f'["{a} {b}?", "{a} {b}?"]' for a, b in CHECKS]
    return tuple((forms + checks + ['": "', '", "', '": ["', '"]', '"}', '?']) * 10)


def check_tokens(tok) -> dict[str, list[int]]:
    """Token ids of the designed steps; a check word the tokenizer splits is an error (the
    leans would then read some other id)."""
    def one(text: str) -> int:
        ids = tok.encode(text, add_special_tokens=False)
        if len(ids) != 1:
            raise AssertionError(f"demo tokenizer splits {text!r} into {len(ids)} tokens")
        return ids[0]
    vocab = [tok.decode([i]) for i in range(len(tok))]
    return {"first": [one(a) for a, _ in CHECKS], "second": [one(" " + b) for _, b in CHECKS],
            "mark": [one("?")], "close": [one('"')],
            "end": [i for i, text in enumerate(vocab) if "]" in text and '["' not in text],
            "more": [i for i, text in enumerate(vocab) if '["' in text],
            "open": [i for i, text in enumerate(vocab) if text.endswith('"')],
            "cut": [i for i, text in enumerate(vocab) if any(c in text for c in '?"]}')]}


def install_text_dims(model, ids: dict[str, list[int]]) -> None:
    """Write the step flags into the embeddings, keep every layer off TEXT_DIMS except the
    counting head (layer 1, query head 2 on key/value head 1), and clear the LM head's reads."""
    lm = model.model.language_model
    emb = lm.embed_tokens.weight
    dims = list(TEXT_DIMS)
    emb[:, dims] = 0.0
    emb[ids["open"], OPEN_DIM] = 1.0
    for token, dim in zip(ids["first"], FIRST_DIMS):
        emb[token, dim] = 1.0
    emb[ids["second"], SECOND_DIM] = 1.0
    emb[ids["mark"], MARK_DIM] = 1.0
    for layer in lm.layers:
        layer.self_attn.o_proj.weight[dims] = 0.0
        layer.mlp.down_proj.weight[dims] = 0.0
        layer.mlp.gate_proj.weight[:, dims] = 0.0
        layer.mlp.up_proj.weight[:, dims] = 0.0
        for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
            proj.weight[:, dims] = 0.0
    _install_counting_head(lm.layers[1].self_attn)
    model.lm_head.weight[:, dims] = 0.0


def _install_counting_head(attn) -> None:
    """Query head 2 scores first words far above every other token and averages their flags
    into USED_DIMS; query head 3 shares its keys and values and is silenced."""
    d = attn.head_dim
    slow = d // 2 - 1  # the slowest rotary pair: the score barely turns over a long context
    kv, q2, q3 = slice(d, 2 * d), slice(2 * d, 3 * d), slice(3 * d, 4 * d)
    attn.k_proj.weight[kv] = 0.0
    attn.k_proj.weight[d + slow, list(FIRST_DIMS)] = 2.0
    attn.k_proj.weight[d + slow, 0] = -1.0  # other text tokens hold dimension 0 alone: their keys point away
    attn.q_proj.weight[q2] = 0.0
    attn.q_proj.weight[2 * d + slow, 0] = 1.0
    attn.k_norm.weight[slow] = _KEY_GAIN
    attn.q_proj.weight[q3] = 0.0
    attn.o_proj.weight[:, q3] = 0.0
    attn.v_proj.weight[kv] = 0.0
    attn.o_proj.weight[:, q2] = 0.0
    for k, (flag, used) in enumerate(zip(FIRST_DIMS, USED_DIMS)):
        attn.v_proj.weight[d + k, flag] = 1.0
        attn.o_proj.weight[used, 2 * d + k] = 1.0


def set_text_leans(head, ids: dict[str, list[int]], unit: dict[int, float]) -> None:
    """LM-head reads of TEXT_DIMS: each step's next token leads by STEP_LEAN, and after a first
    word the tokens holding "?", a quote or a bracket trail by as much (a glued '?"]' would cut
    the check short); a first word is
    pushed down by USED_PUSH times its share of the first words written. Tokens that close a list
    lead, and those that open one with a string trail, by EMPTY_LEAN * (1 - 2 * share of the
    first check) once any check is written: -1 after one,
    0 after two, 1/3 after three, so answers hold a few checks. `unit` holds the value
    each dimension takes, after the final norm, where it is fully on."""
    for k, (first, second) in enumerate(zip(ids["first"], ids["second"])):
        head[first, OPEN_DIM] = (STEP_LEAN + (0.0 if k else FIRST_LEAD) - ORDER_STEP * k) / unit[OPEN_DIM]
        head[first, USED_DIMS[k]] = -USED_PUSH / unit[USED_DIMS[k]]
        head[second, FIRST_DIMS[k]] = STEP_LEAN / unit[FIRST_DIMS[k]]
        head[ids["cut"], FIRST_DIMS[k]] = -STEP_LEAN / unit[FIRST_DIMS[k]]
    for k, dim in enumerate(USED_DIMS):
        lean = (EMPTY_LEAN if k else -EMPTY_LEAN) / unit[dim]
        head[ids["end"], dim] = lean
        head[ids["more"], dim] = -lean
    head[ids["mark"], SECOND_DIM] = STEP_LEAN / unit[SECOND_DIM]
    head[ids["close"], MARK_DIM] = STEP_LEAN / unit[MARK_DIM]


def text_units(model, tok) -> dict[int, float]:
    """The value each of TEXT_DIMS takes at the LM head's input where it is fully on: a flag at
    a text that ends in its token, a share after one answer that wrote only that first word."""
    import torch
    seen = []
    hook = model.lm_head.register_forward_hook(lambda mod, args, out: seen.append(args[0][0, -1]))
    start = "<|im_start|>user\nWrite the checks.<|im_end|>\n<|im_start|>assistant\n"
    first, second = [a for a, _ in CHECKS], [b for _, b in CHECKS]
    texts = {OPEN_DIM: start + '{"questions": ["', SECOND_DIM: start + '["Subject present',
             MARK_DIM: start + '["Subject present?'}
    texts.update({dim: start + f'["{w}' for dim, w in zip(FIRST_DIMS, first)})
    texts.update({dim: start + f'["{a} {b}?", "' for dim, a, b in zip(USED_DIMS, first, second)})
    try:
        with torch.no_grad():
            for text in texts.values():
                model(input_ids=torch.tensor([tok.encode(text)]))
    finally:
        hook.remove()
    return {dim: float(state[dim]) for dim, state in zip(texts, seen)}
