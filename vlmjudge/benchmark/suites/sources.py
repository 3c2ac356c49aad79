"""Where a suite's files are published, and fetching them once into the Hugging Face caches.

A file on the Hub (`HubFile`) goes through `huggingface_hub.hf_hub_download` into the hub cache; a
file its authors publish elsewhere (`WebFile`, pinned to a commit so its bytes never change) goes
through `datasets`' download cache. Offline (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE), a cached copy
is used and nothing else is tried; a file that is neither cached nor reachable ends the load with
one line that names `--suite-file`, the flag that reads the same data from a local copy.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vlmjudge.offline import hub_offline

from .suite import SuiteUnavailableError

#: The flag (and keyword) every unavailable-suite message points to.
SUITE_FILE_HINT = "pass --suite-file PATH (suite_file=) with a local copy"


@dataclass(frozen=True)
class HubFile:
    """A file of a Hugging Face dataset repository, at `revision` (a commit pins it; None is main)."""

    repo: str
    path: str
    revision: str | None = None

    def describe(self) -> str:
        at = f" at {self.revision[:10]}" if self.revision else ""
        return f"{self.path} of the Hugging Face dataset {self.repo}{at}"


@dataclass(frozen=True)
class WebFile:
    """A file at a fixed URL (a raw file of a repository at one commit)."""

    url: str

    def describe(self) -> str:
        return self.url


def offline() -> bool:
    """Whether the Hugging Face libraries are switched offline, read from the environment at call time."""
    value = os.environ.get("HF_DATASETS_OFFLINE", "")
    return hub_offline() or value.strip().upper() in {"1", "ON", "YES", "TRUE"}


def fetch(file: HubFile | WebFile, suite: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """A local path holding `file`: the cached copy, or a fresh download into the cache."""
    if isinstance(file, HubFile):
        return _fetch_hub(file, suite, cache_dir)
    return _fetch_web(file, suite, cache_dir)


def _brief(error: BaseException) -> str:
    """An exception as one short line: its type, and the first line of its message when it has one."""
    lines = str(error).strip().splitlines()
    text = lines[0][:160] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def unavailable(suite: str, file: HubFile | WebFile, reason: str) -> SuiteUnavailableError:
    """The one-line error for a suite whose file cannot be had here."""
    return SuiteUnavailableError(f"suite {suite!r}: cannot get {file.describe()} ({reason}); {SUITE_FILE_HINT}")


def _fetch_hub(file: HubFile, suite: str, cache_dir: str | os.PathLike | None) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, LocalEntryNotFoundError,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    is_offline = offline()
    try:
        path = hf_hub_download(file.repo, file.path, repo_type="dataset", revision=file.revision,
                               cache_dir=cache_dir, local_files_only=is_offline)
    except LocalEntryNotFoundError as error:
        reason = "offline and not in the Hugging Face cache" if is_offline else "not cached and the Hub is unreachable"
        raise unavailable(suite, file, reason) from error
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError, GatedRepoError) as error:
        raise unavailable(suite, file, f"the Hub answered {type(error).__name__}: the source moved") from error
    except OSError as error:  # a network failure that huggingface_hub did not wrap
        raise unavailable(suite, file, f"download failed, {_brief(error)}") from error
    return Path(path)


def _download_folder(cache_dir: str | os.PathLike | None) -> Path:
    """Where `datasets` keeps downloads: `cache_dir` when given, else its own downloads folder."""
    from datasets import config

    return Path(cache_dir) if cache_dir is not None else Path(config.DOWNLOADED_DATASETS_PATH)


def _fetch_web(file: WebFile, suite: str, cache_dir: str | os.PathLike | None) -> Path:
    from datasets import DownloadConfig
    from datasets.utils.file_utils import cached_path, hash_url_to_filename

    folder = _download_folder(cache_dir)
    # The URL pins a commit, so the cache is keyed by the URL alone (use_etag=False): a cached copy
    # is found without a request, which is what makes an offline rerun work.
    cached = folder / hash_url_to_filename(file.url, etag=None)
    if cached.is_file():
        return cached
    if offline():
        raise unavailable(suite, file, "offline and not in the datasets download cache")
    config = DownloadConfig(cache_dir=str(folder), use_etag=False, disable_tqdm=True)
    try:
        return Path(cached_path(file.url, download_config=config))
    except Exception as error:  # httpx, fsspec and aiohttp each raise their own network errors
        raise unavailable(suite, file, f"download failed, {_brief(error)}") from error
