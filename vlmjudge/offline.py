"""Say in one line when a model cannot be loaded, before `from_pretrained` spends half a minute on it.

Offline, `from_pretrained("org/name")` for a checkpoint missing from the Hugging Face cache retries
the Hub for tens of seconds and then raises a generic OSError that names neither the default that
was used nor what to pass instead. `unavailable_reason` answers at once from the local state (a
folder, the Hub cache, `HF_HUB_OFFLINE`) and, online, from one short Hub lookup.
"""
from __future__ import annotations

import os

#: Seconds the one Hub lookup may take when the cache lacks a model and the Hub is not switched off.
PROBE_TIMEOUT_S = 5.0


class ModelUnavailableError(OSError):
    """A model id that is no local folder, not in the Hub cache, and not reachable on the Hub.

    An OSError, as `from_pretrained`'s own failure is, so callers catching that keep working.
    """


def hub_offline() -> bool:
    """Whether huggingface_hub is switched to offline mode (HF_HUB_OFFLINE, read at call time)."""
    from huggingface_hub import constants
    value = os.environ.get("HF_HUB_OFFLINE")
    return constants.HF_HUB_OFFLINE if value is None else value.strip().upper() in {"1", "ON", "YES", "TRUE"}


def unavailable_reason(model_id: str, revision: str | None = None,
                       probe_timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when `model_id` can be loaded (a local folder, a cached Hub id, or one the Hub answers for);
    else why not, in a few words."""
    from huggingface_hub import model_info, try_to_load_from_cache

    model_id = str(model_id)
    if os.path.isdir(model_id):
        return None
    try:
        cached = try_to_load_from_cache(model_id, "config.json", revision=revision)
    except ValueError:  # not shaped like a Hub id: from_pretrained gives the precise message
        return None
    if isinstance(cached, str):
        return None
    if hub_offline():
        return "not a local folder and not in the Hugging Face cache, and HF_HUB_OFFLINE is set"
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        model_info(model_id, revision=revision, timeout=probe_timeout)
    except GatedRepoError:
        return "not a local folder, not in the Hugging Face cache, and gated on the Hub (accept its terms, set HF_TOKEN)"
    except RepositoryNotFoundError:
        return ("not a local folder, not in the Hugging Face cache, and no model of that name on the Hub "
                "(a private one needs HF_TOKEN)")
    except Exception as exc:  # any other lookup failure (no network, a timeout) is the reason given
        return f"not a local folder, not in the Hugging Face cache, and the Hub lookup failed ({type(exc).__name__})"
    return None
