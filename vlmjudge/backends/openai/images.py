"""How the openai backend sends images: each one encoded once per run, and sent once where the server allows.

Why: a method asks about twenty questions of one image. Sent as a base64 PNG with each, every copy is
encoded here and decoded, hashed and processed by the server again. `ImageStore` encodes each image once
per judge: a data URL (any server), or a file written once into `media_dir`, a folder the server may
read (`vlmjudge serve --media-root`), sent as a `file://` URL (`file_format`: raw pixels, lossless).
For vLLM it also names each image part by its pixel digest (`uuid`, read by
vllm/renderers/chat_utils.py): the server skips hashing the data, and once a request with the image has
been answered, later parts carry the uuid alone and the server takes the processed image from its
multimodal cache. Where that cache has dropped it, the server answers 400
("Cache miss ... data is not provided") and `ImageSending._send` sends the request again with the data.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ...images import image_bytes_digest
from .wire import WireBody, png_data_url

log = logging.getLogger("vlmjudge.openai")

#: What names an image part sent to vLLM (the pixel digest after it).
UUID_PREFIX = "vlmjudge-image:"
#: The words in vLLM's answer to a uuid whose image its cache no longer holds.
CACHE_MISS = "Cache miss"
#: Words of a refusal that may be about an image sent by uuid alone (lower case): only such a
#: refusal is answered by sending the images' data.
ABOUT_IMAGES = ("cache miss", "image", "uuid", "multi_modal", "multimodal", "url", "media")
#: File formats by image mode for `media_dir`: uncompressed and lossless, so writing and reading
#: cost a copy (a 1024² RGB PNG took 114 ms to write at compress_level=1, a PPM 1 ms); vLLM's image
#: loader accepts both. Other modes (RGBA, P, I;16 ...) are written as PNG.
RAW_FORMATS = {"RGB": ("PPM", ".ppm"), "L": ("PPM", ".pgm")}


def file_format(image: Any) -> tuple[str, str, dict[str, Any]]:
    """(PIL format, suffix, save options) of the lossless file an image is written as.

    Examples:
        >>> from PIL import Image
        >>> file_format(Image.new("RGB", (2, 2)))[:2], file_format(Image.new("RGBA", (2, 2)))[:2]
        (('PPM', '.ppm'), ('PNG', '.png'))
    """
    if image.mode in RAW_FORMATS:
        return (*RAW_FORMATS[image.mode], {})
    return "PNG", ".png", {"compress_level": 1}


#: Bytes of data URLs kept for resending; beyond them the least recently used is encoded again.
DATA_URL_BUDGET = 512 * 2**20


class ImageStore:
    """Image parts for one judge: every image encoded once, and (vLLM) sent once.

    `media_dir`: write each image once, lossless (`file_format`), in a folder of this run inside
    it and send its `file://` URL (server and client share a filesystem; the server was told the
    folder may be read). None: base64 data URLs, for remote and hosted servers. `uuids`: name each
    part by its pixel digest and leave the data out once the server holds the image (vLLM only).
    """

    def __init__(self, media_dir: str | os.PathLike | None = None, uuids: bool = False, wait_s: float = 60.0) -> None:
        if media_dir is not None and not Path(media_dir).is_dir():
            raise ValueError(f"media_dir {os.fspath(media_dir)!r} is not a folder: name a folder the server "
                             "may read (vlmjudge serve --media-root)")
        self.media_dir = None if media_dir is None else os.fspath(media_dir)
        self.uuids = uuids
        self.wait_s = wait_s
        self._reset()

    @classmethod
    def for_server(cls, server: str, media_dir: str | os.PathLike | None, uuids: bool | None, *,
                   batch_api: bool = False, wait_s: float = 60.0) -> "ImageStore":
        """The store for a server family: uuids by default on vLLM (never in a Batch-API job, whose
        requests run in any order), refused elsewhere."""
        if uuids and server != "vllm":
            raise ValueError(f"image_uuids are a vLLM extension; server={server!r} takes none")
        return cls(media_dir, uuids=(server == "vllm" if uuids is None else uuids) and not batch_api, wait_s=wait_s)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._urls: OrderedDict[str, str] = OrderedDict()  # digest -> URL, least recently used first
        self._url_bytes = 0
        self._folder: str | None = None
        #: digest -> True (the server holds it) or an Event (a request carrying it is in flight)
        self._held: dict[str, Any] = {}
        self.counts = {"encoded": 0, "sent_with_data": 0, "sent_as_uuid": 0, "resent_after_miss": 0}

    def __getstate__(self) -> dict[str, Any]:
        """Settings only: a worker encodes, writes and introduces its images itself."""
        return {"media_dir": self.media_dir, "uuids": self.uuids, "wait_s": self.wait_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # -- parts ------------------------------------------------------------------------
    @staticmethod
    def digest(image: Any) -> str:
        return image_bytes_digest(image)

    def url(self, image: Any) -> str:
        """The image's data or file URL, encoded (and written) the first time it is asked for."""
        key = self.digest(image)
        with self._lock:
            if key in self._urls:
                self._urls.move_to_end(key)
                return self._urls[key]
        url = self._write(image, key) if self.media_dir is not None else png_data_url(image)
        with self._lock:
            if key not in self._urls:
                self.counts["encoded"] += 1
                self._urls[key] = url
                if self.media_dir is None:
                    self._url_bytes += len(url)
                    while self._url_bytes > DATA_URL_BUDGET and len(self._urls) > 1:
                        self._url_bytes -= len(self._urls.popitem(last=False)[1])
            return self._urls[key]

    def part(self, image: Any) -> dict[str, Any]:
        """The content part for `image`, with its data; `outgoing` leaves the data out where it can."""
        part: dict[str, Any] = {"type": "image_url", "image_url": {"url": self.url(image)}}
        if self.uuids:
            part["uuid"] = UUID_PREFIX + self.digest(image)
        return part

    def _write(self, image: Any, key: str) -> str:
        """A lossless file of the image in this run's folder (written whole, then renamed), as a file URL."""
        with self._lock:
            if self._folder is None:
                self._folder = tempfile.mkdtemp(prefix="vlmjudge-images-", dir=self.media_dir)
                weakref.finalize(self, shutil.rmtree, self._folder, True)
            folder = self._folder
        pil_format, suffix, options = file_format(image)
        path = Path(folder) / f"{key}{suffix}"
        if not path.exists():
            partial = path.with_suffix(f".{threading.get_ident()}.part")
            image.save(partial, format=pil_format, **options)
            os.replace(partial, path)
        return path.resolve().as_uri()

    # -- sending ----------------------------------------------------------------------
    def outgoing(self, body: WireBody) -> tuple[WireBody, list[str]]:
        """The body to send now (data left out of the parts the server holds) and the uuids this
        request introduces. A request that introduces none waits for requests in flight with its
        images (at most `wait_s`) rather than sending their data again; one that introduces some
        never waits, so two requests never wait on each other."""
        ids = _uuids(body) if self.uuids else []
        if not ids:
            self._count("sent_with_data", _image_parts(body))
            return body, []
        waited = False
        while True:
            with self._lock:
                state = {u: self._held.get(u) for u in ids}
                absent = [u for u, s in state.items() if s is None]
                pending = [s for s in state.values() if isinstance(s, threading.Event)]
                if absent or not pending or waited:
                    for u in absent:
                        self._held[u] = threading.Event()
                    known = {u for u, s in state.items() if s is True}
                    break
            for event in pending:
                event.wait(self.wait_s)
            waited = True
        self._count("sent_as_uuid", sum(1 for u in _uuids(body, all_parts=True) if u in known))
        self._count("sent_with_data", sum(1 for u in _uuids(body, all_parts=True) if u not in known))
        return (_without_data(body, known) if known else body), absent

    def settle(self, introduced: list[str], answered: bool) -> None:
        """After the request that introduced `introduced`: held when the server answered it."""
        with self._lock:
            for u in introduced:
                event = self._held.pop(u, None)
                if answered:
                    self._held[u] = True
                if isinstance(event, threading.Event):
                    event.set()

    def missed(self, body: WireBody, reason: str) -> None:
        """The server no longer holds some image of `body`: forget them all, and stop leaving
        data out when the refusal was not a cache miss (a server that takes no uuid alone)."""
        with self._lock:
            for u in _uuids(body):
                if self._held.get(u) is True:
                    del self._held[u]
            self.counts["resent_after_miss"] += 1
        if CACHE_MISS not in reason and self.uuids:
            log.warning("the server refused an image sent by its uuid alone (%s); images are sent with "
                        "their data from now on", reason[:200])
            self.uuids = False

    def manifest(self) -> dict[str, Any]:
        """Which way images went: file or data URLs, uuids or not, and how many of each."""
        with self._lock:
            counts = dict(self.counts)
        return {"transfer": "file" if self.media_dir is not None else "data", "uuids": self.uuids, **counts}

    def _count(self, name: str, n: int) -> None:
        with self._lock:
            self.counts[name] += n


class ImageSending:
    """`_send` for `OpenAIJudge` (mixed into it): a body through `ImageStore.outgoing`, resent
    with its data where the server no longer holds an image it named by uuid alone."""

    def _send(self, body: WireBody) -> dict[str, Any]:
        """The response to `body`; a refusal of the body without some image's data that may be
        about the images (`ABOUT_IMAGES`) is answered by sending it whole."""
        store = self._images
        out, introduced = store.outgoing(body)
        try:
            response = self._timed_create(out)
        except self._refusal as exc:
            store.settle(introduced, answered=False)
            if out is body or not any(word in str(exc).lower() for word in ABOUT_IMAGES):
                raise
            response = self._timed_create(body)
            store.missed(body, str(exc))
            store.settle(_uuids(body), answered=True)
            return response
        except BaseException:
            store.settle(introduced, answered=False)
            raise
        store.settle(introduced, answered=True)
        return response

    def _timed_create(self, body: WireBody) -> dict[str, Any]:
        """`_create`, its seconds (retries included) added to `stats.request_seconds`."""
        start = time.perf_counter()
        try:
            return self._create(body)
        finally:
            with self._lock:
                self.stats.request_seconds += time.perf_counter() - start


def _parts(body: WireBody):
    for message in body.standard.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list):
            yield from (p for p in content if isinstance(p, dict) and p.get("type") == "image_url")


def _image_parts(body: WireBody) -> int:
    return sum(1 for _ in _parts(body))


def _uuids(body: WireBody, all_parts: bool = False) -> list[str]:
    """The uuids the body's image parts carry, each once (`all_parts`: one per part)."""
    found = [p["uuid"] for p in _parts(body) if isinstance(p.get("uuid"), str)]
    return found if all_parts else list(dict.fromkeys(found))


def _without_data(body: WireBody, known: set[str]) -> WireBody:
    """A copy of `body` whose image parts named in `known` carry their uuid and no data."""
    messages = []
    for message in body.standard["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = [{"type": "image_url", "image_url": None, "uuid": p["uuid"]}
                       if p.get("type") == "image_url" and p.get("uuid") in known else p for p in content]
            message = {**message, "content": content}
        messages.append(message)
    return WireBody({**body.standard, "messages": messages}, body.extra)
