"""The documentation site as a reader gets it: built once, strictly, into a temporary folder
(about a minute), then read as HTML: the API reference shows constructors with their types and
defaults and every docstring example as code, the metric cards are pages, and each method has
one navigation entry leading to its guide, its card and its API page. The API index page lists
every public name (checked on its Markdown, no build needed). Needs the `docs` dependencies,
which the `test` extra installs: a missing one skips, and fails under CI=true.
"""
from __future__ import annotations

import doctest
import html
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CARDS = sorted(REPO.glob("metrics/*/README.md"))
METHODS = {"TerraVis": "terravis", "VIEScore2": "viescore2", "FAGER": "fager", "Image Regeneration": "regeneration"}
#: Packages whose public names (`__all__`) the API index lists, each linked where it is defined.
PUBLIC_PACKAGES = ("vlmjudge", "vlmjudge.stats", "vlmjudge.benchmark", "vlmjudge.benchmark.suites",
                   "vlmjudge.integrations", "vlmjudge.distributed", "vlmjudge.faces", "vlmjudge.testing",
                   "vlmjudge.backends.hf", "vlmjudge.backends.openai", "terravis", "viescore2", "fager",
                   "regeneration", "t2ibaselines", "t2ibaselines.vqascore", "t2ibaselines.tifa",
                   "t2ibaselines.trained")


def require_docs_tools() -> None:
    """Skip without the site's tools (the `docs` dependencies), but fail under CI=true."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python", "griffe"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{module} is required under CI=true (pip install -e '.[test]')")
            pytest.skip(f"{module} is not installed: the site is not built (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built strictly (a warning fails it) from this checkout."""
    require_docs_tools()
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return out


def text_of(fragment: str) -> str:
    """The visible text of an HTML fragment, whitespace runs made one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def squeezed(text: str) -> str:
    """`text` without spacing and Markdown marks, so a Markdown line and its rendering compare."""
    return re.sub(r"[\s`*]|^- ", "", html.unescape(text))


def object_section(page: str, path: str) -> str:
    """The HTML of the object `path` documents on `page`: from its heading to the next heading of the
    same or a higher level."""
    heading = re.search(rf'<h(\d) id="{re.escape(path)}"', page)
    assert heading, f"no heading for {path}"
    following = re.compile(rf'<h[1-{heading.group(1)}][ >]').search(page, heading.end())
    return page[heading.start():following.start() if following else len(page)]


def parameter_rows(section: str) -> dict[str, list[str]]:
    """Name -> [type, description, default] of the first parameter table of `section`."""
    table = re.search(r'Parameters:</span>.*?<tbody>(.*?)</tbody>', section, re.S)
    assert table, "no parameter table"
    rows = {}
    for row in re.findall(r'<tr class="doc-section-item">(.*?)</tr>', table.group(1), re.S):
        name, *cells = [text_of(cell) for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        rows[name] = cells
    return rows


def test_terravis_api_page_shows_the_constructor_with_types_and_defaults(site):
    from terravis import TerraVis

    section = object_section((site / "api" / "terravis" / "index.html").read_text(encoding="utf-8"),
                             "terravis.core.TerraVis")
    code = re.search(r'<div class="doc-signature[^"]*">(.*?)</div>', section, re.S).group(1)
    signature = " ".join(html.unescape(re.sub(r"<[^>]+>", "", code)).split())  # tags inside code split no words
    assert "lam: float = 1.0" in signature and "alpha: float = 0.5" in signature, signature
    rows = parameter_rows(section)
    assert rows["lam"][0] == "float" and rows["lam"][2] == "1.0", rows["lam"]
    assert rows["alpha"][0] == "float" and rows["alpha"][2] == "0.5", rows["alpha"]
    assert rows["variant"][2] == "'workflow'" and "TerraVis-H" in rows["variant"][1]
    constructor = [p for p in inspect.signature(TerraVis).parameters]
    assert list(rows) == constructor, "every constructor parameter has a row, in the signature's order"
    assert all(cells[1] for cells in rows.values()), "every row says what the parameter does"


def test_every_docstring_example_on_the_api_pages_is_code(site):
    pages = sorted((site / "api").rglob("index.html"))
    assert len(pages) >= 10
    examples = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        examples += len(re.findall(r'<span class="gp">&gt;&gt;&gt; </span>', text))
        outside_code = re.sub(r"<pre[ >].*?</pre>", "", text, flags=re.S)
        assert "&gt;&gt;&gt;" not in outside_code, f"{page.relative_to(site)}: a doctest rendered as text"
    assert examples > 100, "the docstrings' examples are highlighted as Python sessions"


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.parent.name)
def test_every_metric_card_is_a_page_of_the_site(site, card):
    text = card.read_text(encoding="utf-8")
    body = text.split("\n---\n", 1)[1]  # after the YAML front matter, which the site leaves out
    title = re.search(r"^# (.+)$", body, re.M).group(1)
    sections = re.findall(r"^## (.+)$", body, re.M)
    page = (site / "methods" / f"{card.parent.name}-card" / "index.html").read_text(encoding="utf-8")
    headings = [squeezed(text_of(h)).rstrip("¶") for h in re.findall(r"<h[12] [^>]*>(.*?)</h[12]>", page, re.S)]
    assert [squeezed(title), *map(squeezed, sections)] == headings, "the card's headings, in order"
    assert "sdk_version" not in page and "app_file" not in page, "the front matter leaked into the page"
    last = [line for line in body.splitlines() if len(line.split()) >= 3 and not line.startswith(("#", "|"))][-1]
    assert squeezed(last)[:40] in squeezed(text_of(page)), f"the card is included to its end: {last!r}"


def test_each_method_has_one_nav_entry_with_its_guide_card_and_api_page():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    methods = next(entry["Methods"] for entry in nav if "Methods" in entry)
    entries = {name: {k: v for item in pages for k, v in item.items()}
               for entry in methods for name, pages in entry.items()}
    assert list(entries) == [*METHODS, "Baselines"]
    for title, package in METHODS.items():
        assert entries[title] == {"Guide": f"methods/{package}.md", "Metric card": f"methods/{package}-card.md",
                                  "API": f"api/{package}.md"}
        card_page = (REPO / "docs" / entries[title]["Metric card"]).read_text(encoding="utf-8")
        assert f'--8<-- "metrics/{package}/README.md:card"' in card_page, "the card is included, not copied"
    assert entries["Baselines"]["API"] == "api/t2ibaselines.md"
    pages = [p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")]
    assert not [p for p in pages if Path(p).stem in METHODS.values() and not p.startswith(("methods/", "api/"))], \
        "one guide per method, under docs/methods/"


def _home(package: str, name: str) -> str:
    """The module whose API page documents `package.name`: its lazy table's entry, or where it is
    defined; `vlmjudge.distributed`'s page renders the package itself."""
    module = importlib.import_module(package)
    table = {**getattr(module, "_EXPORTS", {}), **{k: f".{v}" for k, v in getattr(module, "_LAZY", {}).items()}}
    if package == "vlmjudge.distributed":
        return package
    if name in table:
        return package + table[name] if table[name].startswith(".") else table[name]
    defined = getattr(getattr(module, name), "__module__", None)
    if defined and defined.startswith(package):
        return defined
    for path in sorted(Path(module.__file__).parent.glob("*.py")):  # a constant: where it is assigned
        if re.search(rf"^{name}\b[^=\n]*=", path.read_text(encoding="utf-8"), re.M):
            return f"{package}.{path.stem}"
    raise LookupError(f"{package}.{name}: no module of the package defines it")


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_the_api_index_links_every_public_name_where_it_is_defined(package):
    index = (REPO / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\[([\w.]+)\]", index))
    module = importlib.import_module(package)
    callable_packages = getattr(module, "_CALLABLE_PACKAGES", {})
    wanted = {f"{callable_packages[n]}.api.{n}" if n in callable_packages else f"{_home(package, n)}.{n}"
              for n in module.__all__ if not n.startswith("__")}
    assert not wanted - links, f"add these to docs/api/index.md: {sorted(wanted - links)}"


def test_the_griffe_extension_examples():
    require_docs_tools()
    spec = importlib.util.spec_from_file_location("griffe_docstrings", REPO / "docs" / "hooks" / "griffe_docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = doctest.testmod(module)
    assert result.attempted >= 5 and result.failed == 0
