"""The attention page (attn/view/attention_page.hpp) in headless Chromium, as a person uses it.

Run by ctest (tests/CMakeLists.txt, test `browser_viewer`), which sets
  ATTN_INSPECT         the built examples/store/inspect
  ATTN_PAGE_EXAMPLE    the built examples/attention_page (the core kernel's output, any length)
  ATTN_BROWSER_OUT     a folder under the build tree for the pages, screenshots and timings.json
The test fails, never skips, when one of them or the browser is missing.

Each page is opened from disk (file://, nothing fetched) and checked through the DOM and the
page's own state (window.attnViewer); any console message of level SEVERE fails the test.
"""

import json
import os
import subprocess
import tempfile
import time

import numpy as np
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

NAME = "double chaise patio furniture cover"
DESCRIPTION = ("protect your outdoor patio furniture from harsh elements with this outdoor patio "
               "furniture cover.")
POSITION = 22  # the description's second "furniture"; the next token is the name's "cover"
TOP = 5
# Budgets, generous for a shared 2-core machine: the page's own time from its script's start
# to every view drawn, and the browser's load event.
BUDGET_160_SCRIPT_MS = 1000
BUDGET_160_LOAD_MS = 3000
BUDGET_LONG_SCRIPT_MS = 5000
BUDGET_UPDATE_MS = 100  # one move of the selected position, redrawn
# Real models' shapes (random attention of that shape): from driver.get to the first render
# done, and the page's size.
BUDGET_LARGE_OPEN_MS = 3000
BUDGET_LARGE_PAGE_BYTES = 32 << 20
BUDGET_FIRST_HEAD_MS = 300  # a head not decoded yet, opened in the matrix view


def required_path(variable):
    value = os.environ.get(variable)
    if not value:
        raise RuntimeError(f"{variable} is not set: run this test through ctest (browser_viewer)")
    return value


INSPECT = required_path("ATTN_INSPECT")
PAGE_EXAMPLE = required_path("ATTN_PAGE_EXAMPLE")
OUT = required_path("ATTN_BROWSER_OUT")
os.makedirs(OUT, exist_ok=True)
TIMINGS = {}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def driver():
    for path in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        assert os.path.exists(path), f"{path} is missing: apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.TemporaryDirectory()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile.name}",
                 "--window-size=1400,1000", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    yield browser
    browser.quit()
    profile.cleanup()
    with open(os.path.join(OUT, "timings.json"), "w") as f:
        json.dump(TIMINGS, f, indent=1)
    print("\nbrowser timings (ms):", json.dumps(TIMINGS))


def open_page(driver, path):
    driver.get("file://" + os.path.abspath(path))
    assert driver.execute_script("return !!(window.attnViewer && window.attnViewer.ready)"), \
        "the page did not finish its first render: " + driver.find_element(By.ID, "error").text
    check_console(driver)
    # Nothing was fetched: the page is its one file.
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0


def check_console(driver):
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, f"console errors: {errors}"


def state(driver):
    return driver.execute_script("return attnViewer.state()")


def top_keys(row, k=TOP):
    """The page's rule: largest first, ties to the earlier key, zeros never count."""
    keys = [j for j in range(len(row)) if row[j] > 0]
    keys.sort(key=lambda j: (-row[j], j))
    return keys[:k]


@pytest.fixture(scope="module")
def exemplar():
    """The chapter's exemplar: its page (at position 22, head L4H2) and inspect --json's data."""
    page = os.path.join(OUT, "exemplar.html")
    args = [INSPECT, "--name", NAME, "--description", DESCRIPTION]
    run(*args, "--position", str(POSITION), "--layer", "4", "--head", "2", "--html", page)
    return page, json.loads(run(*args, "--json", "--all-logits"))


def as_float32(rows):
    """inspect --json's numbers are float32 written as the shortest text that reads back to them:
    read back to float32, then widened, they are the page's float32 values as JavaScript has them."""
    return np.asarray(rows, dtype=np.float32).astype(np.float64).tolist()


def test_embedded_data_equals_inspect_json(driver, exemplar):
    page, expected = exemplar
    open_page(driver, page)
    data = driver.execute_script("return attnViewer.data")
    assert data["tokens"] == expected["tokens"]
    attention = expected["attention"]
    assert [data["layers"], data["heads"], data["positions"]] == [len(attention), len(attention[0]),
                                                                  len(expected["tokens"])]
    # float32 in the page and float32 printed by inspect --json: equal to the bit (tolerance 0).
    assert data["encoding"] == "float32"
    for layer in range(data["layers"]):
        for head in range(data["heads"]):
            assert driver.execute_script(f"return attnViewer.head({layer}, {head})") == \
                as_float32(attention[layer][head]), \
                f"layer {layer + 1}, head {head + 1} differs from inspect --json"
    # Styles as the chapter reads positions: markers, the name emphasised, the description plain.
    separator = expected["tokens"].index("<sep>")
    for i, style in enumerate(data["styles"]):
        wanted = ("marker" if i in (0, separator, len(expected["tokens"]) - 1)
                  else "emphasis" if i < separator else "plain")
        assert style == wanted, f"position {i}"
    # Next tokens: the five largest of softmax(logits) at every position (to float rounding).
    logits = np.array(expected["logits"], dtype=np.float64)
    probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    for i, listed in enumerate(data["next"]):
        assert [p for _, p in listed] == pytest.approx(np.sort(probabilities[i])[::-1][:TOP], abs=1e-6)
    assert data["next"][POSITION][0][0] == "cover</w>"
    state_now = state(driver)
    assert (state_now["selected"], state_now["layer"], state_now["head"]) == (POSITION, 3, 1)


def test_hover_highlights_exactly_the_rows_top_keys(driver, exemplar):
    page, expected = exemplar
    open_page(driver, page)
    driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="head"]').click()
    attention = expected["attention"]

    def hover_and_check(position):
        ActionChains(driver).move_to_element(
            driver.find_element(By.CSS_SELECTOR, f'#queries div[data-index="{position}"]')).perform()
        now = state(driver)
        assert now["selected"] == position
        wanted = top_keys(attention[now["layer"]][now["head"]][position])
        assert now["highlighted"] == wanted
        outlined = [int(e.get_attribute("data-index")) for e in driver.find_elements(By.CSS_SELECTOR, "#keys .top")]
        assert sorted(outlined) == sorted(wanted)
        listed = [int(e.get_attribute("data-index")) for e in driver.find_elements(By.CSS_SELECTOR, "#top-keys li")]
        assert listed == wanted
        return wanted

    # L4H2 copies the name's "cover" (position 6) at the description's second "furniture".
    assert hover_and_check(POSITION)[0] == 6
    for position in (5, 0, 13, len(expected["tokens"]) - 1, POSITION):
        hover_and_check(position)
    # Another head of the layer, chosen by its name in the toggles: the highlight follows it.
    driver.find_element(By.CSS_SELECTOR, '#head-toggles .chip[data-head="2"] .head-name').click()
    assert (state(driver)["layer"], state(driver)["head"]) == (3, 2)
    hover_and_check(9)
    hover_and_check(POSITION)
    # Turning a head off keeps the rest; the screenshot shows the copy head's line.
    driver.find_element(By.CSS_SELECTOR, '#head-toggles input[data-head="0"]').click()
    assert state(driver)["shown"] == [False, True, True, True]
    driver.find_element(By.CSS_SELECTOR, '#head-toggles input[data-head="0"]').click()
    driver.find_element(By.CSS_SELECTOR, '#head-toggles .chip[data-head="1"] .head-name').click()
    hover_and_check(POSITION)
    driver.save_screenshot(os.path.join(OUT, "head_view.png"))
    check_console(driver)


def test_clicking_a_model_view_cell_opens_that_head(driver, exemplar):
    page, _ = exemplar
    open_page(driver, page)
    assert state(driver)["view"] == "model"
    driver.save_screenshot(os.path.join(OUT, "model_view.png"))
    labels = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#grid figcaption")]
    assert labels == [f"L{l}H{h}" for l in range(1, 5) for h in range(1, 5)]
    for layer, head in ((2, 0), (0, 3), (3, 1)):
        driver.find_element(By.CSS_SELECTOR, "#tabs button[data-view=\"model\"]").click()
        driver.find_element(By.CSS_SELECTOR, f'#grid figure[data-layer="{layer}"][data-head="{head}"]').click()
        now = state(driver)
        assert (now["view"], now["layer"], now["head"]) == ("matrix", layer, head)
        assert driver.find_element(By.ID, "view-matrix").is_displayed()
        assert not driver.find_element(By.ID, "view-model").is_displayed()
        assert driver.find_element(By.ID, "open-label").text == f"L{layer + 1}H{head + 1}"
        assert driver.find_element(By.ID, "head-select").get_attribute("value") == f"{layer},{head}"
    check_console(driver)


def test_arrow_keys_move_the_selected_position(driver, exemplar):
    page, expected = exemplar
    open_page(driver, page)
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_DOWN)
    assert state(driver)["selected"] == POSITION + 1
    body.send_keys(Keys.ARROW_UP, Keys.ARROW_UP, Keys.ARROW_LEFT)
    assert state(driver)["selected"] == POSITION - 2
    body.send_keys(Keys.HOME, Keys.ARROW_UP)
    assert state(driver)["selected"] == 0
    body.send_keys(Keys.END, Keys.ARROW_RIGHT)
    assert state(driver)["selected"] == len(expected["tokens"]) - 1
    assert driver.find_element(By.ID, "position-index").text == str(len(expected["tokens"]) - 1)


def test_matrix_view_shows_values_on_hover_and_the_even_spread(driver, exemplar):
    page, expected = exemplar
    open_page(driver, page)
    driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="matrix"]').click()
    canvas = driver.find_element(By.ID, "matrix")
    weight = float(np.float32(expected["attention"][3][1][POSITION][6]))

    def hover(i, j):
        x, y = driver.execute_script(f"return attnViewer.matrixCell({i}, {j})")
        size = canvas.size
        ActionChains(driver).move_to_element_with_offset(canvas, int(x - size["width"] / 2),
                                                         int(y - size["height"] / 2)).perform()
        return state(driver)["hover"], driver.find_element(By.ID, "readout").text

    hovered, readout = hover(POSITION, 6)
    assert hovered == [POSITION, 6, weight]
    assert f"weight {weight:.4f}" in readout
    assert f"even spread 1/{POSITION + 1} = {1 / (POSITION + 1):.4f}" in readout
    assert f"difference +{weight - 1 / (POSITION + 1):.4f}" in readout
    hovered, readout = hover(3, 10)
    assert hovered[:2] == [3, 10] and "masked" in readout
    driver.save_screenshot(os.path.join(OUT, "matrix_view.png"))
    driver.find_element(By.ID, "baseline").click()
    assert state(driver)["baseline"] is True
    assert "below the even spread" in driver.find_element(By.ID, "legend").text
    driver.save_screenshot(os.path.join(OUT, "matrix_view_even_spread.png"))
    # A click selects the clicked cell's row.
    x, y = driver.execute_script("return attnViewer.matrixCell(10, 3)")
    ActionChains(driver).move_to_element_with_offset(canvas, int(x - canvas.size["width"] / 2),
                                                     int(y - canvas.size["height"] / 2)).click().perform()
    assert state(driver)["selected"] == 10
    # The head chooser opens another head.
    Select(driver.find_element(By.ID, "head-select")).select_by_visible_text("L1H3")
    assert (state(driver)["layer"], state(driver)["head"]) == (0, 2)
    check_console(driver)


def update_time(driver, view):
    """Mean time of one move of the selected position, redrawn, in `view` (ms)."""
    return driver.execute_script(f"""
        attnViewer.show('{view}');
        const start = performance.now();
        for (let k = 0; k < 20; ++k) attnViewer.select(attnViewer.state().selected + (k % 2 ? 1 : -1));
        return (performance.now() - start) / 20;""")


def measure(driver, page, name):
    started = time.perf_counter()
    open_page(driver, page)
    wall = (time.perf_counter() - started) * 1000
    timings = driver.execute_script("return attnViewer.timings")
    load = driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    updates = {view: update_time(driver, view) for view in ("model", "head", "matrix")}
    TIMINGS[name] = {"script_ms": timings, "load_event_ms": load, "driver_get_ms": wall,
                     "update_ms": updates, "page_bytes": os.path.getsize(page)}
    for view in ("model", "head", "matrix"):
        driver.execute_script(f"attnViewer.show('{view}')")
        driver.save_screenshot(os.path.join(OUT, f"{name}_{view}.png"))
    check_console(driver)
    return timings, load, updates


def test_full_context_page_renders_within_budget(driver):
    # 160 positions, the model's context: <s>, a name, <sep>, then description tokens.
    ids = [0] + list(range(100, 110)) + [1] + [200 + (i * 37) % 1800 for i in range(147)] + [2]
    assert len(ids) == 160
    page = os.path.join(OUT, "context160.html")
    run(INSPECT, "--ids", ",".join(map(str, ids)), "--html", page)
    timings, load, updates = measure(driver, page, "context160")
    assert driver.execute_script("return attnViewer.data.positions") == 160
    assert driver.execute_script("return attnViewer.data.layers * attnViewer.data.heads") == 16
    assert timings["total"] < BUDGET_160_SCRIPT_MS, timings
    assert load < BUDGET_160_LOAD_MS
    assert max(updates.values()) < BUDGET_UPDATE_MS, updates


def test_thousands_of_positions_stay_responsive(driver):
    page = os.path.join(OUT, "kernel2048.html")
    run(PAGE_EXAMPLE, "--positions", "2048", "--heads", "4", "--output", page)
    timings, _, updates = measure(driver, page, "kernel2048")
    data = driver.execute_script("return attnViewer.data")
    assert (data["positions"], data["heads"], data["encoding"], data["storage"]) == (2048, 4, "unorm8", "lower")
    assert timings["total"] < BUDGET_LONG_SCRIPT_MS, timings
    assert max(updates.values()) < BUDGET_UPDATE_MS, updates
    # Rows still sum to 1 within the 8-bit encoding's half-step per weight.
    for i in (0, 1, 1000, 2047):
        row = driver.execute_script(f"return attnViewer.row(0, 3, {i})")
        assert sum(row) == pytest.approx(1.0, abs=(i + 1) * 0.5 / 255 + 1e-6)
        assert all(w == 0 for w in row[i + 1:])


@pytest.mark.parametrize("layers,heads,positions", [(12, 12, 1024), (16, 32, 512)])
def test_real_model_shapes_open_within_3_seconds(driver, layers, heads, positions):
    """GPT-2 small's shape at its full context, and a 16-layer × 32-head model (a Llama 3.2 1B's
    shape) at 512 positions: random attention of that shape from the attention_page example."""
    name = f"random_{layers}x{heads}_{positions}"
    page = os.path.join(OUT, name + ".html")
    run(PAGE_EXAMPLE, "--layers", str(layers), "--heads", str(heads), "--positions", str(positions),
        "--output", page)
    size = os.path.getsize(page)
    assert size < BUDGET_LARGE_PAGE_BYTES, f"{size} bytes"
    started = time.perf_counter()
    open_page(driver, page)
    opened = (time.perf_counter() - started) * 1000
    load = driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    timings = driver.execute_script("return attnViewer.timings")
    data = driver.execute_script("return attnViewer.data")
    assert (data["layers"], data["heads"], data["positions"], data["encoding"]) == (layers, heads, positions, "unorm8")
    # Every head in the model view, drawn from its thumbnail.
    assert len(driver.find_elements(By.CSS_SELECTOR, "#grid figure")) == layers * heads
    # A head no view has shown yet opens in the matrix view at once; rows still sum to 1.
    first_head = driver.execute_script(f"""
        const start = performance.now();
        attnViewer.openHead({layers - 1}, {heads - 1});
        attnViewer.show('matrix');
        return performance.now() - start;""")
    for i in (0, positions // 2, positions - 1):
        row = driver.execute_script(f"return attnViewer.row({layers - 1}, {heads - 1}, {i})")
        assert sum(row) == pytest.approx(1.0, abs=(i + 1) * 0.5 / 255 + 1e-6)
    updates = {view: update_time(driver, view) for view in ("model", "head", "matrix")}
    TIMINGS[name] = {"open_ms": opened, "load_event_ms": load, "script_ms": timings, "first_head_ms": first_head,
                     "update_ms": updates, "page_bytes": size}
    driver.execute_script("attnViewer.show('model')")
    driver.save_screenshot(os.path.join(OUT, f"{name}_model.png"))
    check_console(driver)
    assert opened < BUDGET_LARGE_OPEN_MS, TIMINGS[name]
    assert load < BUDGET_LARGE_OPEN_MS, TIMINGS[name]
    assert first_head < BUDGET_FIRST_HEAD_MS, TIMINGS[name]
    assert max(updates.values()) < BUDGET_UPDATE_MS, TIMINGS[name]


def canvas_pixel(driver, canvas_id, x, y):
    """The RGB of a canvas's pixel at (x, y) in its own pixels."""
    return driver.execute_script(
        f"return Array.from(document.getElementById('{canvas_id}').getContext('2d').getImageData({x}, {y}, 1, 1).data.slice(0, 3))")


def test_sliding_window_keys_are_unreachable_not_zero(driver):
    """A sliding layer (layer 1, window 8) beside a full one: the keys before a row's window are drawn
    in their own colour, named unreachable by the readout, the legend and the head view, and the even
    spread counts the visible keys only. Zero attention in a full layer stays dark purple."""
    window, positions = 8, 48
    page = os.path.join(OUT, "window.html")
    run(PAGE_EXAMPLE, "--positions", str(positions), "--layers", "2", "--heads", "2", "--window", str(window),
        "--output", page)
    open_page(driver, page)
    assert driver.execute_script("return attnViewer.data.windows") == [window, 0]
    row = driver.execute_script("return attnViewer.row(0, 1, 40)")
    assert all(w == 0 for w in row[:40 - window + 1]) and sum(row[33:41]) == pytest.approx(1, abs=1e-5)
    assert driver.execute_script("return [attnViewer.outside(0, 40, 32), attnViewer.outside(0, 40, 33), "
                                 "attnViewer.outside(1, 40, 0)]") == [True, False, False]

    driver.execute_script("attnViewer.openHead(0, 1); attnViewer.select(40); attnViewer.show('matrix')")
    x, y = driver.execute_script("return attnViewer.matrixCell(40, 2)")
    outside = canvas_pixel(driver, "matrix", int(x), int(y))
    assert outside == [251, 230, 200], outside  # OUTSIDE, not viridis's 0 (68, 1, 84) nor masked grey
    ActionChains(driver).move_to_element_with_offset(
        driver.find_element(By.ID, "matrix"), int(x) - driver.find_element(By.ID, "matrix").size["width"] // 2,
        int(y) - driver.find_element(By.ID, "matrix").size["height"] // 2).perform()
    assert "unreachable" in driver.find_element(By.ID, "readout").text
    assert "sliding window of 8" in driver.find_element(By.ID, "legend").text
    # a reachable cell's even spread is 1/8, not 1/41
    x, y = driver.execute_script("return attnViewer.matrixCell(40, 38)")
    ActionChains(driver).move_to_element_with_offset(
        driver.find_element(By.ID, "matrix"), int(x) - driver.find_element(By.ID, "matrix").size["width"] // 2,
        int(y) - driver.find_element(By.ID, "matrix").size["height"] // 2).perform()
    assert "even spread 1/8 " in driver.find_element(By.ID, "readout").text

    # the full layer: its small weights are viridis, never the unreachable colour
    driver.execute_script("attnViewer.openHead(1, 1)")
    x, y = driver.execute_script("return attnViewer.matrixCell(40, 2)")
    assert canvas_pixel(driver, "matrix", int(x), int(y)) != [251, 230, 200]
    assert "sliding window" not in driver.find_element(By.ID, "legend").text

    # head view: the keys before the window are marked, with a tooltip saying why
    driver.execute_script("attnViewer.openHead(0, 1); attnViewer.show('head')")
    marked = driver.execute_script(
        "return Array.from(document.querySelectorAll('#keys div[data-outside]')).map((d) => +d.dataset.index)")
    assert marked == list(range(0, 40 - window + 1))
    assert "sliding window of 8" in driver.find_element(By.ID, "window-note").text
    key = driver.find_element(By.CSS_SELECTOR, '#keys div[data-index="3"]')
    ActionChains(driver).move_to_element(key).perform()
    assert "unreachable" in key.get_attribute("title")

    # model view: the sliding head's thumbnail shows the unreachable corner in its colour
    driver.execute_script("attnViewer.show('model')")
    assert "unreachable" in driver.find_element(By.CSS_SELECTOR, "#view-model .hint").text
    assert "sliding window of 8" in driver.find_element(
        By.CSS_SELECTOR, '#grid figure[data-layer="0"][data-head="1"]').get_attribute("title")
    corner = driver.execute_script("""
        const canvas = document.querySelector('#grid figure[data-layer="0"][data-head="1"] canvas');
        return Array.from(canvas.getContext('2d').getImageData(2, canvas.height - 3, 1, 1).data.slice(0, 3));""")
    assert corner == [251, 230, 200], corner
    driver.save_screenshot(os.path.join(OUT, "window_model.png"))
    check_console(driver)
