"""`JudgeCallback`: judge-scored samples for fixed prompts at the end of validation, in Lightning.

    cb = JudgeCallback(["terravis", "viescore2"], prompts, sample_fn=lambda m, p: m.generate(p),
                       judge={"model": "Qwen/Qwen3-VL-8B-Instruct", "cache": "judge.sqlite"})
    trainer = lightning.Trainer(callbacks=[cb], ...)

Every `every_n_epochs` validation epochs it samples one image per prompt with
`sample_fn(pl_module, prompts)`, scores them, and logs with `pl_module.log`:
`judge/<label>` (mean [0, 1] score over scored images; absent when none was scored) and
`judge/<label>_na` (share of images the method could not score). Loggers that take images
get one captioned grid per method (TensorBoard `add_image`, WandB `log_image`); others
(CSVLogger) get scalars only. By default rank zero samples and scores and broadcasts the
scalars; `distributed="shard"` splits the prompts over ranks and gathers the results.
The judge lives outside the module and the checkpoint: `state_dict` holds the score history.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the standalone `pytorch_lightning` distribution
    from pytorch_lightning.callbacks import Callback

from vlmjudge.integrations.callbacks import PromptJudging
from vlmjudge.integrations.samples import ScoredSamples, send_image

DISTRIBUTED_MODES = ("rank_zero", "shard")


class JudgeCallback(PromptJudging, Callback):
    """Score samples for fixed prompts at validation end and log the scores (and image grids)."""

    def __init__(self, methods: Any, prompts: Sequence[str], sample_fn: Callable[[Any, list[str]], Any],
                 every_n_epochs: int = 1, judge: Any = None, *, inputs: Mapping[str, Sequence[Any]] | None = None,
                 column_names: Mapping[str, str] | None = None, prefix: str = "judge", log_images: bool = True,
                 distributed: str = "rank_zero", grid_options: Mapping[str, Any] | None = None) -> None:
        if every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be >= 1, got {every_n_epochs}")
        if distributed not in DISTRIBUTED_MODES:
            raise ValueError(f"distributed must be one of {DISTRIBUTED_MODES}, got {distributed!r}")
        super().__init__(methods, judge, column_names, prompts, inputs, sample_fn, prefix)
        self.every_n_epochs = every_n_epochs
        self.log_images = log_images
        self.distributed = distributed
        self.grid_options = dict(grid_options or {})
        self.history: list[dict[str, Any]] = []

    # -- Lightning hooks ---------------------------------------------------------------
    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs:
            return
        scored = self._run(trainer, pl_module)
        scalars = scored.scalars if scored is not None else None
        if self.distributed == "rank_zero":
            scalars = trainer.strategy.broadcast(scalars, src=0)
        for key, value in self.log_keys(scalars).items():
            pl_module.log(key, value, on_step=False, on_epoch=True, sync_dist=False)
        self.history.append({"epoch": trainer.current_epoch, "step": trainer.global_step, **scalars})
        if scored is not None and trainer.is_global_zero and self.log_images:
            for label, grid in scored.grids(self.panel, **self.grid_options).items():
                for logger in trainer.loggers:
                    send_image(logger, f"{self.prefix}/{label}_samples", grid, trainer.global_step,
                               caption=f"{label}, epoch {trainer.current_epoch}")

    @property
    def state_key(self) -> str:
        """Distinct per prefix, so several judge callbacks can share a trainer and a checkpoint."""
        return self._generate_state_key(prefix=self.prefix)

    def state_dict(self) -> dict[str, Any]:
        """The score history only: never the judge, its model or the records."""
        return {"history": [dict(h) for h in self.history]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.history = [dict(h) for h in state_dict.get("history", [])]

    # -- sampling and scoring, per distributed mode ----------------------------------------
    def _run(self, trainer: Any, pl_module: Any) -> ScoredSamples | None:
        """The scored samples (on rank zero; on every rank when sharding), None on other ranks."""
        if self.distributed == "rank_zero":
            if not trainer.is_global_zero:
                return None
            return self.sample_and_score(pl_module)
        rank, world = trainer.global_rank, trainer.world_size
        mine = list(range(rank, len(self.prompts), world))
        local = self.sample_and_score(pl_module, mine) if mine else None
        parts = _all_gather_objects((mine, local), world)
        return self._merge(parts)

    def _merge(self, parts: list[tuple[list[int], ScoredSamples | None]]) -> ScoredSamples:
        order = sorted((i, k, part) for indices, part in parts if part is not None
                       for k, i in enumerate(indices))
        images = [part.images[k] for _, k, part in order]
        records = {label: [part.records[label][k] for _, k, part in order] for label in self.panel.labels}
        merged = ScoredSamples([self.prompts[i] for i, _, _ in order], images, records,
                               self.panel.summarize(records))
        self.last = merged
        return merged


def _all_gather_objects(obj: Any, world: int) -> list[Any]:
    """Every rank's `obj`, in rank order (just `[obj]` outside a process group)."""
    import torch.distributed as dist

    if world == 1 or not (dist.is_available() and dist.is_initialized()):
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out
