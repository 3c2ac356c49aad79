"""One real TRL GRPOTrainer step with the VIEScore2 reward functions on a tiny offline model."""
import pytest

pytest.importorskip("trl")

from datasets import Dataset  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

from viescore2.rewards import Target, completion_text, reward_functions, rewards  # noqa: E402

# Whole lines are tokens, so every sampled completion is made of well-formed lines and the
# rewards vary between completions even though the model is random.
LINES = ["none\n", "score: 7/10\n", "pq: 6/10\n", "sc: 3/10\n", "r5: 8,9!\n", "r2: 3\n", "r9: 1\n",
         "user\n", "assistant\n", "\n", "Judge the image.", "Rate the image."]
SPECIAL = ["<pad>", "[UNK]", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    import torch
    out = tmp_path_factory.mktemp("tiny_lm")
    vocab = {t: i for i, t in enumerate(SPECIAL + LINES)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[^\n]*\n|[^\n]+"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIAL)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="[UNK]",
                                   eos_token="<|im_end|>", chat_template=CHAT_TEMPLATE)
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                      pad_token_id=vocab["<pad>"], eos_token_id=vocab["<|im_end|>"], tie_word_embeddings=True)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = vocab["<pad>"]
    model.generation_config.eos_token_id = vocab["<|im_end|>"]
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return str(out)


class Recorder:
    """Wraps a reward function and keeps what TRL passed in and got back."""

    def __init__(self, func):
        self.func, self.__name__, self.calls = func, func.__name__, []

    def __call__(self, **kwargs):
        out = self.func(**kwargs)
        self.calls.append((kwargs, out))
        return out


@pytest.mark.timeout(300)
def test_one_grpo_step_logs_the_direct_rewards(tiny_model_dir, tmp_path):
    from trl import GRPOConfig, GRPOTrainer
    funcs, weights = reward_functions()
    recorders = [Recorder(f) for f in funcs]
    dataset = Dataset.from_list([
        {"prompt": [{"role": "user", "content": "Judge the image."}],
         "target": "pq: 6/10\nsc: 3/10\nartifact:\nr5: 8,9!\nmisalign:\nr2: 3"},
        {"prompt": [{"role": "user", "content": "Rate the image."}], "target": "score: 7/10"},
    ])
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=6, max_steps=1, use_cpu=True, bf16=False, report_to="none",
                      logging_steps=1, reward_weights=weights, save_strategy="no", seed=0,
                      dataloader_num_workers=0)
    trainer = GRPOTrainer(model=tiny_model_dir, reward_funcs=recorders, args=args, train_dataset=dataset)
    trainer.train()
    logged = next(entry for entry in trainer.state.log_history if "reward" in entry)

    (kwargs, _), = recorders[0].calls
    completions, targets = kwargs["completions"], kwargs["target"]
    assert len(completions) == 4 and isinstance(completions[0], list)  # conversational completions
    assert all(set(r.calls[0][0]["target"]) == set(targets) for r in recorders)

    fresh, _ = reward_functions()
    direct = {f.__name__: f(prompts=kwargs["prompts"], completions=completions, completion_ids=kwargs["completion_ids"],
                            target=targets) for f in fresh}
    for name, values in direct.items():
        assert logged[f"rewards/{name}/mean"] == pytest.approx(sum(values) / len(values), abs=1e-6)
    totals = [rewards(completion_text(c), Target.from_text(t))["total"] for c, t in zip(completions, targets)]
    assert logged["reward"] == pytest.approx(sum(totals) / len(totals), abs=1e-6)
    assert any(v > 0 for values in direct.values() for v in values), "every reward was 0: the check is vacuous"
