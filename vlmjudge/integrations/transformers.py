"""Judge scores in Hugging Face training loops: a `TrainerCallback` for `Trainer`, and a plain
function (`log_judge_scores`) for custom accelerate loops such as the diffusers training scripts.

After each evaluation the main process samples one image per prompt, scores them and logs
`judge/<label>` and `judge/<label>_na`, so every `report_to` integration and
`metric_for_best_model` see them; grids and `samples.jsonl` go under `<output_dir>/judge/`.
docs/training.md shows both in use.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from transformers import TrainerCallback

from vlmjudge.integrations.callbacks import PromptJudging
from vlmjudge.integrations.panel import JudgePanel
from vlmjudge.integrations.samples import check_inputs, score_samples, send_image


class JudgeTrainerCallback(PromptJudging, TrainerCallback):
    """Score samples for fixed prompts after evaluation and log them in a `Trainer` run."""

    def __init__(self, methods: Any, prompts: Sequence[str], sample_fn: Callable[[Any, list[str]], Any],
                 judge: Any = None, *, every_n_evals: int = 1, inputs: Mapping[str, Sequence[Any]] | None = None,
                 column_names: Mapping[str, str] | None = None, prefix: str = "judge",
                 save_samples: bool = True) -> None:
        if every_n_evals < 1:
            raise ValueError(f"every_n_evals must be >= 1, got {every_n_evals}")
        super().__init__(methods, judge, column_names, prompts, inputs, sample_fn, prefix)
        self.every_n_evals = every_n_evals
        self.save_samples = save_samples
        self.trainer: Any = None
        self.evaluations = 0

    def attach(self, trainer: Any) -> "JudgeTrainerCallback":
        """Register with `trainer` (if not yet) and log through `trainer.log`, reaching every `report_to`."""
        if self not in trainer.callback_handler.callbacks:
            trainer.add_callback(self)
        self.trainer = trainer
        return self

    def on_evaluate(self, args: Any, state: Any, control: Any, model: Any = None,
                    metrics: dict[str, float] | None = None, **kwargs: Any) -> None:
        self.evaluations += 1
        if self.evaluations % self.every_n_evals or not state.is_world_process_zero:
            return
        if model is None:
            raise RuntimeError("JudgeTrainerCallback.on_evaluate got no model to sample from")
        scored = self.sample_and_score(model)
        logs = self.log_keys(scored.scalars)
        if metrics is not None:
            metrics.update(logs)
        if self.trainer is not None:
            self.trainer.log(dict(logs))
        else:
            entry = {**logs, "step": state.global_step}
            if state.epoch is not None:
                entry["epoch"] = state.epoch
            state.log_history.append(entry)
        if self.save_samples:
            scored.save(self.panel, os.path.join(args.output_dir, self.prefix, f"step-{state.global_step}"))
        if self.trainer is not None:
            grids = scored.grids(self.panel)
            for callback in self.trainer.callback_handler.callbacks:
                for label, grid in grids.items():
                    _send_to_report_callback(callback, f"{self.prefix}/{label}_samples", grid, state.global_step)


def _send_to_report_callback(callback: Any, tag: str, grid: Any, step: int) -> bool:
    """TensorBoardCallback keeps a `tb_writer`; WandbCallback a `_wandb` module with `Image` (logged, as that
    callback logs, with the global step as a value rather than wandb's own step)."""
    writer = getattr(callback, "tb_writer", None)
    if writer is not None:
        return send_image(writer, tag, grid, step)
    run = getattr(callback, "_wandb", None)
    if run is not None and getattr(run, "run", None) is not None and hasattr(run, "Image"):
        run.log({tag: run.Image(grid), "train/global_step": step})
        return True
    return False


def log_judge_scores(panel: JudgePanel | Any, images: Any, prompts: Sequence[str], *, judge: Any = None,
                     accelerator: Any = None, step: int | None = None, out_dir: str | os.PathLike | None = None,
                     prefix: str = "judge", inputs: Mapping[str, Sequence[Any]] | None = None) -> dict[str, float]:
    """Score validation images of a custom loop and log them: scalars via `accelerator.log`, a captioned
    grid per method to trackers that take images, grids and `samples.jsonl` to `out_dir`. `panel` is a
    `JudgePanel` (build it once: scorers load their models) or methods for a new one with `judge`."""
    if not isinstance(panel, JudgePanel):
        panel = JudgePanel(panel, judge)
    elif judge is not None:
        raise ValueError("judge= goes with method names; a JudgePanel already has its judges")
    scored = score_samples(panel, images, prompts, check_inputs(list(prompts), inputs))
    logs = {f"{prefix}/{k}": float(v) for k, v in scored.scalars.items()}
    if accelerator is not None:
        accelerator.log(logs, step=step)
        if accelerator.is_main_process:
            grids = scored.grids(panel)
            for tracker in accelerator.trackers:
                for label, grid in grids.items():
                    _send_to_tracker(tracker, f"{prefix}/{label}_samples", grid, step or 0)
    if out_dir is not None:
        scored.save(panel, os.path.join(out_dir, f"step-{step}") if step is not None else out_dir)
    return logs


def _send_to_tracker(tracker: Any, tag: str, grid: Any, step: int) -> bool:
    """accelerate trackers: TensorBoard's has a `writer`; WandB's `log` takes `wandb.Image`."""
    if getattr(tracker, "name", None) == "wandb":
        import wandb

        tracker.log({tag: wandb.Image(grid)}, step=step)
        return True
    return send_image(getattr(tracker, "writer", None), tag, grid, step)
