"""TIFA (Hu et al. 2023) on a vlmjudge judge: an image's multiple-choice questions about its prompt,
answered by the judge and scored as the share answered as expected."""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use.
_EXPORTS: dict[str, str] = {
    "Tifa": ".core",
    "TifaRecord": ".records",
    "QuestionResult": ".records",
    "TifaQuestion": ".questions",
    "ELEMENT_TYPES": ".questions",
    "read_qa_file": ".questions",
    "TifaPack": ".pack",
    "load_pack": ".pack",
    "benchmark_summary": ".scoring",
    "SPEC": ".spec",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
