"""The report page in a real browser: headless Chromium (Debian's `chromium` + `chromium-driver`,
installed by .ci/run; never downloaded here) driven by selenium, on a page built from a small
`fastattn reproduce --quick --paper` run (Sander's Figs. 2 and 6 and Props. 2, 4, 5, and Musat's
Fig. 6: about 15 s of CPU)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile

import pytest

from fastattn.cli import main
from fastattn.experiments import batch, claims, report
from fastattn.experiments.registry import FIGURES, figure_order

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install '.[test]')")

FIGS = ["sander2024-fig2", "sander2024-fig6", "sander2024-props", "musat2025-fig6"]
PAPERS = ["sander2024", "musat2025"]
ARGS = ["reproduce", "--paper", "sander2024", "--paper", "musat2025", "--quick"]


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("no Chromium here (apt-get install chromium chromium-driver; .ci/run installs "
                    "them where it runs as root): the report page was not checked in a browser")
    return browser, driver


def _reproduce(out) -> str:
    """`fastattn reproduce` of the two papers restricted to FIGS into `out`; its stdout."""
    real = batch.select
    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout):
        mp.setattr(batch, "select", lambda papers=(), names=(): [n for n in real(papers)
                                                                  if n in FIGS])
        assert main([*ARGS, "--out", str(out)]) == 0
    return stdout.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("page")
    return out, _reproduce(out)


@pytest.fixture(scope="module")
def page(run):
    return run[0]


@pytest.fixture(scope="module")
def browser(page):
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    binary, driver = _chromium()
    options = Options()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    try:
        chrome.get((page / "index.html").as_uri())
        yield chrome
    finally:
        chrome.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def _width(chrome, width: int):
    """The page at a window `width` (CSS pixels of the viewport), then back at 1400."""
    def viewport(w: int) -> None:
        chrome.set_window_size(w, 1000)
        # the window's frame takes some pixels: widen until the viewport is `w`
        inner = chrome.execute_script("return window.innerWidth")
        chrome.set_window_size(2 * w - inner, 1000)

    viewport(width)
    try:
        assert chrome.execute_script("return window.innerWidth") == width
        yield
    finally:
        viewport(1400)


def _visible_rows(chrome) -> list:
    return [r for r in chrome.find_elements("css selector", "tr.claim") if r.is_displayed()]


def _rows(page) -> list[dict]:
    return json.loads((page / "claims.json").read_text())


def test_no_console_errors(browser):
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors


def test_every_image_decodes(browser):
    images = browser.find_elements("css selector", "figure img")
    assert len(images) == len(FIGS)
    widths = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure img')).map("
        "i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 0 for w in widths), widths


def test_one_row_per_claim_of_the_folders_papers(browser, page):
    rows = _rows(page)
    assert len(rows) == len(claims.load(PAPERS))
    assert {r["paper"] for r in rows} == set(PAPERS)
    assert len(browser.find_elements("css selector", "tr.claim")) == len(rows)
    assert len(_visible_rows(browser)) == len(rows)
    sections = [s.get_attribute("data-paper") for s in
                browser.find_elements("css selector", "section.paper")]
    assert sections == PAPERS


def test_a_paper_run_counts_only_its_papers(run):
    """`reproduce --paper` prints the claims of its papers only: the other papers' claims are not
    "not run" there (nor in `fastattn report`'s text)."""
    out, stdout = run
    (line,) = [x for x in stdout.splitlines() if x.startswith("claims: ")]
    counted = sum(int(n) for n in re.findall(r"(\d+) \w+", line))
    assert counted == len(claims.load(PAPERS)), line
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["report", str(out)]) == 0
    assert text.getvalue().startswith(f"{len(claims.load(PAPERS))} claims;"), text.getvalue()


def test_filters_hide_and_show_rows(browser, page):
    from selenium.webdriver.support.ui import Select

    rows = _rows(page)
    select = Select(browser.find_element("id", "paper-filter"))
    select.select_by_value("musat2025")
    visible = _visible_rows(browser)
    assert len(visible) == sum(r["paper"] == "musat2025" for r in rows) > 0
    assert {r.get_attribute("data-paper") for r in visible} == {"musat2025"}
    select.select_by_value("all")
    assert len(_visible_rows(browser)) == len(rows)
    box = browser.find_element("css selector", "input.status-filter[value='reproduced']")
    box.click()
    assert len(_visible_rows(browser)) == sum(r["status"] != "reproduced" for r in rows)
    box.click()
    assert len(_visible_rows(browser)) == len(rows)


def test_counts_follow_the_filters(browser, page):
    """"Claims (n)" of each paper and the bar's "k of n claims shown" count the rows shown."""
    rows = _rows(page)

    def counts() -> dict[str, str]:
        return {s.get_attribute("data-paper"): browser.execute_script(
            "return arguments[0].querySelector('.claim-count').textContent", s)
            for s in browser.find_elements("css selector", "section.paper")}

    def shown() -> str:
        return browser.find_element("id", "shown-count").text

    total = {p: sum(r["paper"] == p for r in rows) for p in PAPERS}
    assert counts() == {p: str(n) for p, n in total.items()}
    assert shown() == f"{len(rows)} of {len(rows)} claims shown"
    box = browser.find_element("css selector", "input.status-filter[value='reproduced']")
    box.click()
    try:
        left = {p: sum(r["paper"] == p and r["status"] != "reproduced" for r in rows)
                for p in PAPERS}
        assert all(left[p] < total[p] for p in PAPERS)
        assert counts() == {p: f"{left[p]} of {total[p]}" for p in PAPERS}
        assert shown() == f"{sum(left.values())} of {len(rows)} claims shown"
    finally:
        box.click()
    assert counts() == {p: str(n) for p, n in total.items()}


def test_click_enlarges_a_figure_and_escape_closes_it(browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    box = browser.find_element("id", "lightbox")
    for close in ("click", "escape"):
        image = browser.find_elements("css selector", "figure img")[0]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", image)
        image.click()
        assert box.is_displayed()
        assert box.find_element("tag name", "img").get_attribute("src").endswith(".png")
        if close == "click":
            box.click()
        else:
            ActionChains(browser).send_keys(Keys.ESCAPE).perform()
        assert not box.is_displayed(), close


def test_figures_and_claims_in_numeric_order(browser, page):
    """Each paper's figures by `figure_order` (Sander's Fig. 2 before Fig. 10, not after), and
    each paper's claims grouped by their figures in that order."""
    for section in browser.find_elements("css selector", "section.paper"):
        paper = section.get_attribute("data-paper")
        ids = [f.get_attribute("id").removeprefix("fig-")
               for f in section.find_elements("css selector", "figure")]
        assert ids == sorted((n for n in FIGURES if n.startswith(paper + "-")), key=figure_order)
        assert ids == sorted(ids, key=figure_order)
        keys = [r.get_attribute("data-key") for r in section.find_elements("css selector",
                                                                               "tr.claim")]
        figure = {r["key"]: r["figure"] for r in _rows(page) if r["paper"] == paper}
        ranks = [(figure[k] is None, figure_order(figure[k] or "")) for k in keys]
        assert ranks == sorted(ranks), paper
    ids = [f.get_attribute("id") for f in browser.find_elements("css selector", "figure")]
    assert ids.index("fig-sander2024-fig2") < ids.index("fig-sander2024-fig10")


def test_reproduce_list_is_in_numeric_order(capsys):
    assert main(["reproduce", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == sorted(FIGURES, key=figure_order)
    assert names.index("he2025-e2") < names.index("he2025-e10")
    assert names.index("zhang2025-fig9") < names.index("he2025-e1")       # papers in PAPERS order


def test_deviation_column(browser, page):
    """|measured − paper| in the claim's unit for every measured claim, and in standard errors
    where the claim has one (Sander's Prop. 4 Monte Carlo)."""
    head = [th.text for th in browser.find_elements("css selector", "table.claims tr th")]
    assert "|measured − paper|" in head
    by_key = {(r["paper"], r["key"]): r for r in _rows(page)}
    in_se = 0
    for tr in browser.find_elements("css selector", "tr.claim"):
        row = by_key[(tr.get_attribute("data-paper"), tr.get_attribute("data-key"))]
        cell = tr.find_element("css selector", "td.deviation").text.splitlines()
        if row["deviation"] is None:
            assert cell == ["–"]
            continue
        assert float(cell[0]) == pytest.approx(abs(row["measured"] - row["paper_value"]),
                                               rel=1e-5, abs=1e-300)
        if row["deviation_se"] is not None:
            in_se += 1
            assert float(cell[1].removesuffix(" s.e.")) == pytest.approx(
                abs(row["measured"] - row["paper_value"]) / row["se"], rel=1e-2)
    assert in_se >= 1


def test_fields_in_words_with_the_json_path_on_hover(browser, page):
    rows = {(r["paper"], r["key"]): r for r in _rows(page)}
    for tr in browser.find_elements("css selector", "tr.claim"):
        row = rows[(tr.get_attribute("data-paper"), tr.get_attribute("data-key"))]
        field = tr.find_element("css selector", "span.field")
        assert row["field"] in field.get_attribute("title")
        assert "summary." not in field.text and "_" not in field.text, field.text


def test_one_sided_tolerances_read_naturally():
    base = {"paper_value": 1.0, "tolerance_in_se": False}
    assert report._tolerance_text({**base, "tolerance": 0.0, "relative": True,
                                   "compare": "at_least"}) == "at least the paper's 1"
    assert report._tolerance_text({**base, "tolerance": 0.01, "relative": False,
                                   "compare": "at_least"}) == "at least 0.99 (the paper's 1 − 0.01)"
    assert report._tolerance_text({**base, "tolerance": 0.1, "relative": True,
                                   "compare": "at_most"}) == "at most 1.1 (the paper's 1 + 10 %)"
    assert report._tolerance_text({**base, "tolerance": 0.04, "relative": True,
                                   "compare": "approx"}) == "within 4 % of the paper's value"
    assert report._tolerance_text({**base, "tolerance": 4, "relative": False, "compare": "approx",
                                   "tolerance_in_se": True}) == "within ± 4 s.e. of the paper's value"


def test_no_horizontal_overflow_at_800_px(browser):
    """At 800 px the page is no wider than the window: the claims tables scroll in their own box,
    the figures take one column, and no figure is shown below half the size it was drawn at. At
    1400 px the claims tables fit without scrolling."""
    overflow = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.claims')).map("
        "t => t.scrollWidth - t.parentNode.clientWidth)")
    assert max(overflow) <= 0, overflow
    with _width(browser, 800):
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 800
        scales = browser.execute_script(
            "return Array.from(document.querySelectorAll('figure img')).map("
            "i => i.getBoundingClientRect().width / i.naturalWidth)")
        assert min(scales) >= report._FLOOR_SCALE - 1e-3, scales


def test_layout_from_the_png_header(tmp_path):
    """A figure's size is read from its PNG header; a row of panels (width/height ≥ 2) or a figure
    a grid cell would show below 60 % of its drawn size spans the row, the others take a cell;
    neither is shown below half its drawn size."""
    def png(width: int, height: int):
        path = tmp_path / f"{width}x{height}.png"
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + (13).to_bytes(4, "big") + b"IHDR"
                         + width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes(5))
        return path

    assert report._png_size(png(1170, 468)) == (1170, 468)
    (tmp_path / "not.png").write_bytes(b"GIF89a" + bytes(30))
    assert report._png_size(tmp_path / "not.png") is None
    assert report._png_size(tmp_path / "missing.png") is None
    assert report._layout((1000, 400)) == ("wide", "min-width:500px")      # a row of panels
    assert report._layout((1300, 1000)) == ("wide", "min-width:650px")     # too large for a cell
    assert report._layout((1000, 900)) == ("", "min-width:500px")
    assert report._layout(None) == ("", "")


def test_wide_figures_take_the_whole_row(browser, page):
    """A row of panels (Props. 2, 4, 5: width/height 2.5) spans the grid; a figure a cell shows at
    60 % of its drawn size or more stays in its cell."""
    for figure in browser.find_elements("css selector", "figure"):
        image = figure.find_elements("css selector", "img")
        if not image:
            continue
        natural = browser.execute_script("return [arguments[0].naturalWidth, "
                                         "arguments[0].naturalHeight]", image[0])
        grid = browser.execute_script("return arguments[0].parentNode.clientWidth", figure)
        wide = report._layout(tuple(natural))[0] == "wide"
        shown = figure.rect["width"]
        assert (shown > 0.9 * grid) == wide, (figure.get_attribute("id"), natural, shown, grid)
    assert "wide" in browser.find_element("id", "fig-sander2024-props").get_attribute("class")


def test_commands_wrap_only_between_words(browser):
    """No command breaks inside a word (a figure name or a flag at its hyphen), even at 360 px."""
    with _width(browser, 360):
        broken = browser.execute_script(
            "var out=[];document.querySelectorAll('code.cmd').forEach(function(c){"
            "  c.querySelectorAll('span').forEach(function(w){"
            "    var r=document.createRange();r.selectNodeContents(w);"
            "    var lines=new Set(Array.from(r.getClientRects()).map(x=>Math.round(x.top)));"
            "    if(lines.size>1){out.push(w.textContent);}});});"
            "return out")
        wrapped = browser.execute_script(
            "return Array.from(document.querySelectorAll('code.cmd')).filter("
            "c => c.getClientRects().length > 1).length")
    assert wrapped > 0                 # at 360 px some command does wrap: between its words
    assert broken == []


def test_a_claim_link_lands_below_the_sticky_bar(browser):
    link = browser.find_element("css selector", "tr.claim a[href='#fig-sander2024-fig6']")
    browser.execute_script("window.scrollTo(0, 0)")
    browser.execute_script("arguments[0].click()", link)
    bar = browser.execute_script(
        "return document.querySelector('.filters').getBoundingClientRect().bottom")
    top = browser.execute_script(
        "return document.getElementById('fig-sander2024-fig6').getBoundingClientRect().top")
    assert browser.execute_script("return window.scrollY") > 0
    assert bar <= top <= bar + 40, (bar, top)


def test_wall_times_survive_a_cached_rerun(page, tmp_path):
    """A rerun that finds every figure finished keeps each figure's compute time and the total
    (their sum), and says separately how long the rerun itself took."""
    def times(text: str) -> tuple[list[str], str]:
        return (re.findall(r"computed in ([^,]+),", text),
                re.search(r'id="compute-time">([^<]+)<', text).group(1))

    folder = tmp_path / "again"
    shutil.copytree(page, folder)
    before = times((folder / "index.html").read_text())
    stdout = _reproduce(folder)
    assert "0 computed" in stdout
    text = (folder / "index.html").read_text()
    assert times(text) == before
    docs = [json.loads((folder / f"{n}.json").read_text()) for n in FIGS]
    assert before[1] == report._duration(sum(d["wall_time"] for d in docs))
    rerun = json.loads((folder / batch.MANIFEST).read_text())["wall_time"]
    assert re.search(r'id="last-command">([^<]+)<', text).group(1) == report._duration(rerun)


def test_batch_names_the_figures_used():
    assert set(FIGS) <= set(batch.select())
