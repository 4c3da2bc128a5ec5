"""The Run buttons of "Attention is a query" (docs/javascripts/sql-runner.js),
in a real Chromium: SQLite compiled to WebAssembly (sql.js, served by the
site itself) runs the page's attention query and returns qkv's numbers; a
broken query shows the database's message; nothing is loaded before the
first click. Chapter 9b's Run buttons run the whole layer (the package's
mha_*.sql files) on the toy sentence and return qkv.multi_head_attention's
numbers. Also the build hook that ships sql.js and the script tag."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from mkdocs.exceptions import PluginError

import hooks  # docs/hooks, on pytest's pythonpath
import qkv
import qkv.sql
from qkv import toy
from site_sweep import AXE, AXE_RUN, inject_axe, open_page  # tests/support, on pytest's pythonpath

PAGE = "chapters/attention-sql/"
LAYER_PAGE = "chapters/attention-sql-layer/"
BANK = ["money", "bank", "grows"]


def bank_head() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = toy.bank_sentence(BANK)  # (3, 4)
    return x @ toy.W_QUERY, x @ toy.W_KEY, x @ toy.W_VALUE


def bank_layer() -> tuple:
    """Chapter 9b's toy layer: qkv.multi_head_attention's arguments (self-attention, 2 heads, W_O = I)."""
    x = toy.bank_sentence(BANK)  # (3, 4)
    in_proj = np.concatenate([toy.W_QUERY.T, toy.W_KEY.T, toy.W_VALUE.T])  # (12, 4)
    return x, x, x, 2, in_proj, np.eye(4)


def open_sql_page(browser, site_url):
    return open_page(browser, site_url + PAGE, scheme="light", width=1280)


def block_with(page, text: str):
    block = page.locator("div.qkv-sql", has_text=text)
    assert block.count() == 1, f"expected one SQL block containing {text!r}, found {block.count()}"
    return block


def run_button(block):
    return block.locator("xpath=following-sibling::div[contains(@class, 'qkv-sql-bar')][1]").get_by_role(
        "button", name="Run this SQL in your browser (SQLite)"
    )


def panel_of(block):
    return block.locator("xpath=following-sibling::div[contains(@class, 'qkv-sql-panel')][1]")


def result_rows(panel) -> tuple[list[str], list[list[str]]]:
    table = panel.locator("table.qkv-sql-table")
    table.wait_for(timeout=30000)
    columns = table.locator("thead th").all_inner_texts()
    # A cell shows at most 4 decimals; its full value is in data-full (and its title).
    full = "els => els.map(td => td.dataset.full || td.textContent)"
    rows = [row.locator("td").evaluate_all(full) for row in table.locator("tbody tr").all()]
    return columns, rows


def sqljs_requests(page) -> list[str]:
    return page.evaluate("performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/sqljs/'))")


@pytest.mark.browser
def test_run_computes_the_attention_output_of_qkv(browser, site_url):
    page, context, problems = open_sql_page(browser, site_url)
    assert sqljs_requests(page) == [], "sql.js must not load before the first Run"
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    columns, rows = result_rows(panel_of(block))
    assert columns == ["qpos", "dim", "val"]
    expected, _ = qkv.scaled_dot_product_attention(*bank_head())  # (3, 4)
    got = np.full(expected.shape, np.nan)
    for qpos, dim, val in rows:
        got[int(qpos), int(dim)] = float(val)
    assert len(rows) == expected.size
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    loaded = sqljs_requests(page)
    assert any(name.endswith("/sqljs/sql-wasm.wasm") for name in loaded), loaded
    assert all(name.startswith(site_url) for name in loaded), loaded
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_an_edited_query_runs_and_a_broken_one_shows_the_database_message(browser, site_url):
    page, context, problems = open_sql_page(browser, site_url)
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    panel = panel_of(block)
    result_rows(panel)
    editor = panel.get_by_label(re.compile("Query"))
    # The edited text runs after the blocks above it: bank's weights, from the page's views.
    editor.fill("SELECT kpos, weight FROM weights WHERE qpos = 1 ORDER BY kpos;")
    run_button(block).click()
    page.wait_for_function(
        "el => el.querySelector('th') && el.querySelector('th').textContent === 'kpos'",
        arg=panel.element_handle(),
    )
    _, rows = result_rows(panel)
    _, weights = qkv.scaled_dot_product_attention(*bank_head())
    np.testing.assert_allclose([float(w) for _, w in rows], weights[1], rtol=0, atol=1e-12)
    for broken, message in (
        ("SELEC qpos FROM output;", 'near "SELEC": syntax error'),
        ("SELECT * FROM no_such_table;", "no such table: no_such_table"),
    ):
        editor.fill(broken)
        run_button(block).click()
        error = panel.locator(".qkv-sql-error")
        error.wait_for(timeout=30000)
        assert re.fullmatch(rf"Error: block \d+, line 1: {re.escape(message)}", error.inner_text()), error.inner_text()
        assert panel.locator("table").count() == 0
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_the_padding_block_runs_after_the_blocks_above_it(browser, site_url):
    """The last block inserts the tokens of mask_padding.sql (above it): qkv's padded weights."""
    page, context, problems = open_sql_page(browser, site_url)
    block = block_with(page, "INSERT INTO tokens")
    run_button(block).click()
    _, rows = result_rows(panel_of(block))
    valid = np.array([True, True, False])
    _, expected = qkv.scaled_dot_product_attention(*bank_head(), valid)
    got = np.zeros_like(expected)
    for qpos, kpos, weight in rows:
        got[int(qpos), int(kpos)] = float(weight)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    context.close()
    assert not problems, "\n".join(problems)


def test_the_build_names_a_missing_sqljs_and_how_to_install_it(tmp_path):
    with pytest.raises(
        PluginError, match=r"sql\.js is not installed \(sql-wasm\.js, sql-wasm\.wasm missing in .*: run `npm ci`"
    ):
        hooks.sqljs_files(tmp_path)


def test_the_build_ships_sqljs_from_node_modules(tmp_path):
    for name in hooks.SQLJS_FILES:
        (tmp_path / name).write_bytes(b"x")
    assert hooks.sqljs_files(tmp_path) == {
        "javascripts/sqljs/sql-wasm.js": tmp_path / "sql-wasm.js",
        "javascripts/sqljs/sql-wasm.wasm": tmp_path / "sql-wasm.wasm",
    }


def test_the_runner_script_is_added_only_to_pages_that_ask_for_it():
    class Page:
        def __init__(self, meta):
            self.meta, self.url = meta, "chapters/attention-sql/"

            class F:
                src_uri = "chapters/attention-sql.md"

            self.file = F()

    html = "<html><body><p>x</p></body></html>"
    assert hooks.with_sql_runner(html, Page({})) == html
    with_runner = hooks.with_sql_runner(html, Page({"sql_runner": True}))
    assert '<script src="../../javascripts/sql-runner.js" defer></script>\n</body>' in with_runner
    with pytest.raises(PluginError, match=r"docs/chapters/attention-sql\.md: no </body>"):
        hooks.with_sql_runner("<p>x</p>", Page({"sql_runner": True}))


def test_the_sql_page_asks_for_the_runner_and_wasm_in_its_csp():
    text = (Path(__file__).resolve().parent.parent / "docs" / "chapters" / "attention-sql.md").read_text()
    front = text.split("---")[1]
    assert re.search(r"^sql_runner: true$", front, re.MULTILINE)
    assert re.search(r"^csp_wasm: true$", front, re.MULTILINE)


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_open_panel_passes_axe(browser, site_url, scheme):
    """The query box, the result table and the error line, as axe-core sees them."""
    if not AXE.is_file():
        pytest.fail("axe-core is not installed; run `npm ci`", pytrace=False)
    page, context, problems = open_page(browser, site_url + PAGE, scheme=scheme, width=1280)
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    panel = panel_of(block)
    result_rows(panel)
    other = block_with(page, "CREATE TEMP VIEW scores")
    run_button(other).click()
    panel_of(other).get_by_label(re.compile("Query")).fill("SELEC 1;")
    run_button(other).click()
    panel_of(other).locator(".qkv-sql-error").wait_for(timeout=30000)
    inject_axe(page)
    violations = page.evaluate(AXE_RUN, [".qkv-sql-panel", None])
    context.close()
    assert not violations, "\n".join(violations)
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_a_run_shows_one_editable_box_and_a_material_style_table(browser, site_url):
    """Issue 25.4: the query appears once (the static block gives way to the box), the result has a
    header row, numbers show at most 4 decimals with the full value on hover and when copied."""
    page, context, problems = open_sql_page(browser, site_url)
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    panel = panel_of(block)
    columns, _ = result_rows(panel)
    assert not block.is_visible() and panel.get_by_label(re.compile("Query")).is_visible()
    assert columns == ["qpos", "dim", "val"]
    shown = panel.locator("table.qkv-sql-table td").all_inner_texts()
    assert all(len(v.split(".")[1]) <= 4 for v in shown if "." in v), shown
    cell = panel.locator("td[data-full]").first
    full = cell.get_attribute("title")
    assert float(full) != float(cell.inner_text()) and abs(float(full) - float(cell.inner_text())) < 5e-5
    copied = page.evaluate(
        """(cell) => { const range = document.createRange(); range.selectNodeContents(cell);
            const selection = getSelection(); selection.removeAllRanges(); selection.addRange(range);
            const data = new DataTransfer();
            cell.dispatchEvent(new ClipboardEvent('copy', {clipboardData: data, bubbles: true, cancelable: true}));
            return data.getData('text/plain'); }""",
        cell.element_handle(),
    )
    assert copied == full, (copied, full)
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_the_scratch_box_queries_every_view_and_an_edit_marks_the_steps_below(browser, site_url):
    page, context, problems = open_sql_page(browser, site_url)
    scratch = page.locator(".qkv-sql-scratch")
    scratch.get_by_label(re.compile("Scratch query")).fill("SELECT COUNT(DISTINCT qpos) AS n FROM weights;")
    scratch.get_by_role("button", name="Run the scratch query in your browser (SQLite)").click()
    table = scratch.locator("table.qkv-sql-table")
    table.wait_for(timeout=30000)
    assert table.locator("td").all_inner_texts() == ["3"]  # the weights view of the page's last step
    # Run the output step, then edit the scores step: the output step says it is out of date.
    out_block = block_with(page, "CREATE TEMP VIEW output")
    run_button(out_block).click()
    result_rows(panel_of(out_block))
    stale = panel_of(out_block).locator(".qkv-sql-stale")
    assert not stale.is_visible()
    scores = block_with(page, "CREATE TEMP VIEW scores")
    run_button(scores).click()
    editor = panel_of(scores).get_by_label(re.compile("Query"))
    editor.fill(editor.input_value().replace("SUM(q.val * k.val)", "0 * SUM(q.val * k.val)"))
    run_button(scores).click()
    stale.wait_for(state="visible", timeout=30000)
    run_button(out_block).click()  # the edited step now runs above it: uniform weights, output = mean of v
    page.wait_for_function("el => el.hidden", arg=stale.element_handle(), timeout=30000)
    _, rows = result_rows(panel_of(out_block))
    v = bank_head()[2]
    got = {(int(q), int(d)): float(val) for q, d, val in rows}
    np.testing.assert_allclose(got[(1, 0)], v[:, 0].mean(), atol=1e-4)
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_an_error_names_its_line(browser, site_url):
    page, context, problems = open_sql_page(browser, site_url)
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    panel = panel_of(block)
    result_rows(panel)
    panel.get_by_label(re.compile("Query")).fill("SELECT 1;\nSELECT nope FROM weights;")
    run_button(block).click()
    error = panel.locator(".qkv-sql-error")
    error.wait_for(timeout=30000)
    assert re.fullmatch(r"Error: block \d+, line 2: no such column: nope", error.inner_text()), error.inner_text()
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_a_result_says_what_it_shows_and_a_view_error_names_its_block(browser, site_url):
    """A learner's findings: a block that only creates views shows the last one's rows under a
    caption naming it, and a view that reads a missing table names the block that made it."""
    page, context, problems = open_sql_page(browser, site_url)
    block = block_with(page, "CREATE TEMP VIEW output")
    run_button(block).click()
    panel = panel_of(block)
    result_rows(panel)
    assert (
        panel.locator("table.qkv-sql-table caption").inner_text() == "Rows of view output, the last this block creates"
    )
    panel.get_by_label(re.compile("Query")).fill("CREATE TEMP VIEW output AS\nSELECT * FROM expz;")
    run_button(block).click()
    error = panel.locator(".qkv-sql-error")
    error.wait_for(timeout=30000)
    assert re.fullmatch(r"Error: block \d+, reading view output: no such table: expz", error.inner_text()), (
        error.inner_text()
    )
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_the_scratch_box_names_the_mask_in_force_and_can_replace_it(browser, site_url):
    """The scratch box runs every block, the padding mask's last: it says so, and a reader can
    drop that mask there and get the hand-worked, unmasked output of bank (the exercise's way)."""
    page, context, problems = open_sql_page(browser, site_url)
    scratch = page.locator(".qkv-sql-scratch")
    in_force = scratch.locator(".qkv-sql-in-force").inner_text()
    assert re.fullmatch(r"In force here: visible from block \d+ \(the last block that defines each\)\.", in_force), (
        in_force
    )
    texts = page.locator("div.qkv-sql").evaluate_all("els => els.map(e => e.textContent)")  # rendered or not
    last_visible = max(i for i, text in enumerate(texts) if "CREATE TEMP VIEW visible" in text)
    assert "JOIN tokens" in texts[last_visible]  # the padding mask
    assert in_force.startswith(f"In force here: visible from block {last_visible + 1} ")
    scratch.get_by_label(re.compile("Scratch query")).fill(
        "DROP VIEW visible;\nCREATE TEMP VIEW visible AS SELECT qpos, kpos, score FROM scores;\n"
        "SELECT dim, val FROM output WHERE qpos = 1 ORDER BY dim;"
    )
    assert scratch.get_by_label(re.compile("Scratch query")).get_attribute("rows") == "4"  # grew with the query
    scratch.get_by_role("button", name="Run the scratch query in your browser (SQLite)").click()
    table = scratch.locator("table.qkv-sql-table")
    table.wait_for(timeout=30000)
    assert table.locator("caption").inner_text() == "Rows of the statement at line 3"
    full = "els => els.map(td => td.dataset.full || td.textContent)"
    vals = [float(v) for v in table.locator("td:nth-child(2)").evaluate_all(full)]
    q, k, v = bank_head()
    expected, _ = qkv.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(vals, expected[1], atol=1e-12)
    context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_the_layer_page_runs_the_whole_layer_in_sqlite_and_gets_qkvs_numbers(browser, site_url):
    """Chapter 9b: the last block (mha_output.sql) runs after every step above it, in sql.js, from
    the rows the build inserted: its output is qkv.multi_head_attention's; the scratch box reads
    every head's weights from head_weights."""
    page, context, problems = open_page(browser, site_url + LAYER_PAGE, scheme="light", width=1280)
    assert sqljs_requests(page) == [], "sql.js must not load before the first Run"
    expected_out, expected_weights = qkv.multi_head_attention(*bank_layer())  # (3, 4), (2, 3, 3)
    block = block_with(page, "CREATE TEMP VIEW mha_output")
    run_button(block).click()
    panel = panel_of(block)
    columns, rows = result_rows(panel)
    assert panel.locator("table.qkv-sql-table caption").inner_text() == (
        "Rows of view mha_output, the last this block creates"
    )
    assert columns == ["pos", "dim", "val"]
    assert len(rows) == expected_out.size
    got = np.full(expected_out.shape, np.nan)
    for pos, dim, val in rows:
        got[int(pos), int(dim)] = float(val)
    np.testing.assert_allclose(got, expected_out, rtol=0, atol=1e-12)
    scratch = page.locator(".qkv-sql-scratch")
    scratch.get_by_label(re.compile("Scratch query")).fill("SELECT head, qpos, kpos, weight FROM head_weights;")
    scratch.get_by_role("button", name="Run the scratch query in your browser (SQLite)").click()
    _, rows = result_rows(scratch)
    weights = np.full(expected_weights.shape, np.nan)
    for head, qpos, kpos, weight in rows:
        weights[int(head), int(qpos), int(kpos)] = float(weight)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-12)
    context.close()
    assert not problems, "\n".join(problems)


def test_the_layer_page_shows_the_packages_files_and_no_sql_lives_in_the_runner():
    """One home for the SQL: each mha_*.sql file's statements are in a runnable block of chapter 9b
    (from the package, at build time), and sql-runner.js holds none of them."""
    import parts  # docs/hooks, on pytest's pythonpath
    from sql_blocks import compact, in_box, statements

    root = Path(__file__).resolve().parent.parent
    page = parts.load_page(root / "docs" / "chapters" / "attention-sql-layer.md", root / "docs")
    blocks = "\n".join(str(fn()) for fn in page.values.values())
    runner = (root / "docs" / "javascripts" / "sql-runner.js").read_text(encoding="utf-8")
    for name in qkv.sql.QUERY_NAMES:
        if not name.startswith("mha_") or name == "mha_mask_pairs":
            continue
        text = compact(statements(name)) if name == "mha_tables" else statements(name)  # tables on fewer lines
        assert text in blocks or in_box(text) in blocks, f"{name}.sql is not shown on chapter 9b"  # or in a box
        for line in text.splitlines():
            if line.strip().startswith("CREATE TEMP"):
                assert line.strip() not in runner, f"sql-runner.js copies {name}.sql: {line.strip()}"
