"""The report page in a real browser: headless Chromium (Debian's `chromium` + `chromium-driver`,
installed by .ci/run; never downloaded here) driven by selenium, on a page built from a small
`fastattn reproduce --quick --paper` run (Sander's Figs. 2 and 6 and Musat's Fig. 6: a few seconds)."""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest

from fastattn.cli import main
from fastattn.experiments import batch, claims

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install '.[test]')")

FIGS = ["sander2024-fig2", "sander2024-fig6", "musat2025-fig6"]


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("no Chromium here (apt-get install chromium chromium-driver; .ci/run installs "
                    "them where it runs as root): the report page was not checked in a browser")
    return browser, driver


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("page")
    real = batch.select
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "select", lambda papers=(), names=(): [n for n in real(papers)
                                                                  if n in FIGS])
        assert main(["reproduce", "--paper", "sander2024", "--paper", "musat2025", "--quick",
                     "--out", str(out)]) == 0
    return out


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


def _visible_rows(chrome) -> list:
    return [r for r in chrome.find_elements("css selector", "tr.claim") if r.is_displayed()]


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


def test_one_row_per_claim(browser, page):
    rows = json.loads((page / "claims.json").read_text())
    assert len(rows) == len(claims.load())
    assert len(browser.find_elements("css selector", "tr.claim")) == len(rows)
    assert len(_visible_rows(browser)) == len(rows)


def test_filters_hide_and_show_rows(browser, page):
    from selenium.webdriver.support.ui import Select

    rows = json.loads((page / "claims.json").read_text())
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


def test_click_enlarges_a_figure(browser):
    browser.find_elements("css selector", "figure img")[0].click()
    box = browser.find_element("id", "lightbox")
    assert box.is_displayed()
    assert box.find_element("tag name", "img").get_attribute("src").endswith(".png")
    box.click()
    assert not box.is_displayed()


def test_batch_names_the_figures_used():
    assert set(FIGS) <= set(batch.select())
