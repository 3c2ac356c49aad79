"""Training-loop faces for every registered method: `datasets` maps, Lightning and HF Trainer
callbacks, an accelerate-loop function, and RL rewards, all through one `JudgePanel`.

Submodules import their framework (datasets, lightning, transformers) only when imported
themselves, so `import vlmjudge.integrations` stays light:

- `vlmjudge.integrations.datasets`: `judge_map`, `add_judge_columns`
- `vlmjudge.integrations.lightning`: `JudgeCallback`
- `vlmjudge.integrations.transformers`: `JudgeTrainerCallback`, `log_judge_scores`
- `vlmjudge.integrations.rewards`: `reward_fn`, `weighted`
"""
from __future__ import annotations

from vlmjudge.integrations.panel import INHERIT, JudgePanel, Method, release_judges

__all__ = ["INHERIT", "JudgePanel", "Method", "release_judges"]
