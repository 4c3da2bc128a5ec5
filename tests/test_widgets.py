"""The interactive widgets and quizzes, used as a reader would, in Chromium.

Every number a widget shows is compared with the value computed here from
qkv, not with a copied constant."""

from __future__ import annotations

import numpy as np
import pytest

import qkv
from site_sweep import CONFIGS, WIDTHS, open_page  # tests/support, on pytest's pythonpath
from workers import widget_pages

pytestmark = pytest.mark.browser

# Each widget and the page that shows it, from the pages' declarations.
WIDGET_PAGES = widget_pages()


def fmt(values) -> list[str]:
    return [f"{v:.4f}" for v in np.asarray(values, dtype=float).ravel()]


def cells(locator) -> list[str]:
    return [t.strip() for t in locator.locator("tbody td").all_inner_texts()]


def widget_page(browser, site_url, name, scheme="light", width=1280):
    page, context, problems = open_page(browser, site_url + WIDGET_PAGES[name], scheme=scheme, width=width)
    widget = page.locator(f".qkv-widget[data-widget={name}]")
    assert widget.count() == 1, f"no {name} widget on /{WIDGET_PAGES[name]}"
    page.wait_for_selector(f".qkv-widget[data-widget={name}][data-ready=true]", timeout=10000)
    widget.scroll_into_view_if_needed()
    return page, context, problems, widget


def test_token_vector_shows_the_library_numbers(browser, site_url):
    page, context, problems, widget = widget_page(browser, site_url, "token-vectors")
    table = qkv.toy.EMBEDDINGS
    picker = widget.locator("select")
    for token_id, word in enumerate(qkv.toy.VOCAB):
        picker.select_option(str(token_id))
        assert cells(widget.locator("table.qkv-embedding")) == fmt(table[token_id])
        hot = widget.locator("table.qkv-onehot td").all_inner_texts()
        assert hot == ["1" if j == token_id else "0" for j in range(len(qkv.toy.VOCAB))]
        # Each cell under the word it stands for (a learner could not tell which 0 was which).
        assert widget.locator("table.qkv-onehot th").all_inner_texts() == list(qkv.toy.VOCAB)
        shown = widget.locator(".qkv-neighbours li").all_inner_texts()
        expected = [f"{qkv.toy.VOCAB[j]} {s:.4f}" for j, s in qkv.nearest_neighbours(token_id, table, k=4)]
        assert len(shown) == 4, shown
        assert [" ".join(s.split()) for s in shown] == expected, word
    # The curriculum's example, as a reader sees it.
    picker.select_option("0")
    assert widget.locator(".qkv-neighbours li").first.inner_text().split() == ["kitten", "0.9985"]
    assert "similarity 0" in widget.inner_text()
    context.close()
    assert not problems, problems


def test_token_vector_works_by_keyboard(browser, site_url):
    page, context, problems, widget = widget_page(browser, site_url, "token-vectors")
    widget.locator("select").focus()
    page.keyboard.press("ArrowDown")  # cat -> dog
    assert widget.locator("table.qkv-embedding caption").inner_text().startswith("embedding row 1")
    assert widget.locator("label").first.inner_text() == "Token"
    context.close()
    assert not problems, problems


def test_a_phone_keeps_each_sine_with_its_cosine(browser, site_url):
    """A learner's finding: at 390 px the PE row wrapped five values to a line, so a pair's sine
    and cosine fell on two lines. Every line but the last now holds an even number of values."""
    page, context, problems, widget = widget_page(browser, site_url, "positions", width=390)
    widget.locator("select").nth(0).select_option("16")
    counts = widget.locator("table.qkv-pe-row tr.qkv-axes").evaluate_all("rows => rows.map(r => r.cells.length)")
    context.close()
    assert sum(counts) == 16 and len(counts) > 1, counts  # wrapped, all 16 shown
    assert all(n % 2 == 0 for n in counts), counts
    assert not problems, problems


def test_positions_shows_rows_and_sums_from_the_library(browser, site_url):
    page, context, problems, widget = widget_page(browser, site_url, "positions")
    selects = widget.locator("select")
    selects.nth(0).select_option("6")
    selects.nth(1).select_option("8")
    position = widget.locator("input[type=range]")
    position.focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert cells(widget.locator("table.qkv-pe-row")) == fmt(qkv.sinusoidal_encoding(8, 6)[3])
    assert widget.locator("output").inner_text() == "3"  # the slider says its value
    label = widget.locator("canvas").get_attribute("aria-label")
    assert "8 positions" in label and "6 dimensions" in label and "Position 3" in label

    # Axes and a colour legend say what the heatmap shows (issue 25.3).
    assert widget.locator(".qkv-axis-x").inner_text().replace("\n", " ") == "dim 0 (pair 0, fastest) → dim 5 (slowest)"
    assert "positions 0 (top) to 7 (bottom); outlined: 3" in widget.locator(".qkv-axis-y").inner_text()
    assert widget.locator(".qkv-legend").inner_text().split() == ["−1", "+1"]

    # Every control drives the sentence part: a word is a position, and the width is the table's.
    words = ["money", "bank", "grows"]
    widget.locator(".qkv-words button").nth(2).click()
    assert position.input_value() == "2" and "Position 2" in widget.locator("canvas").get_attribute("aria-label")
    assert cells(widget.locator("table.qkv-pe-row")) == fmt(qkv.sinusoidal_encoding(3, 6)[2])  # the word's row
    assert "set Width to d_model = 4" in widget.locator(".qkv-note").last.inner_text()
    selects.nth(0).select_option("4")
    tokens = qkv.toy.bank_sentence(words)
    pe = qkv.sinusoidal_encoding(3, 4)
    for index in range(len(words)):
        widget.locator(".qkv-words button").nth(index).click()
        assert cells(widget.locator("table.qkv-token-row")) == fmt(tokens[index])
        assert cells(widget.locator("table.qkv-pe-row")) == fmt(pe[index])  # its position row, outlined above
        assert cells(widget.locator("table.qkv-sum-row")) == fmt(tokens[index] + pe[index])
    position.focus()
    page.keyboard.press("End")  # position 7: past the three words
    assert "is past the sentence" in widget.locator(".qkv-note").last.inner_text()
    assert widget.locator(".qkv-words button[aria-pressed=true]").count() == 0
    context.close()
    assert not problems, problems


def test_attention_explorer_matches_the_library_at_every_scale(browser, site_url):
    page, context, problems, widget = widget_page(browser, site_url, "attention")
    sentence_picker = widget.locator("select")
    scale = widget.locator("input[type=range]")
    steps = int(scale.get_attribute("max")) + 1
    sentences = sentence_picker.locator("option").all_inner_texts()
    assert "money bank grows" in sentences and "river bank flows" in sentences
    checked = 0
    for index, text in enumerate(sentences):
        sentence_picker.select_option(str(index))
        x = qkv.toy.bank_sentence(text.split())
        q, k, v = x @ qkv.toy.W_QUERY, x @ qkv.toy.W_KEY, x @ qkv.toy.W_VALUE
        scale.focus()
        page.keyboard.press("Home")
        for _ in range(steps):
            factor = float(widget.locator("output").inner_text().split()[1])
            output, weights = qkv.scaled_dot_product_attention(q, k, v, scale=factor)
            assert cells(widget.locator("table.qkv-attention")) == fmt(weights), (text, factor)
            # bank stays selected as the sentence changes, wherever it stands in it
            bank = text.split().index("bank")
            assert cells(widget.locator("table.qkv-context-row")) == fmt(output[bank]), (text, factor)
            assert "\u201cbank\u201d" in widget.locator("table.qkv-context-row caption").inner_text()
            checked += 1
            page.keyboard.press("ArrowRight")
    assert checked == len(sentences) * steps
    # Soft to sharp, left to right (issue 25.3: it ran backwards): each step right multiplies the
    # scores by a larger factor, and bank's largest weight in "money bank grows" grows with it.
    sentence_picker.select_option("0")
    scale.focus()
    page.keyboard.press("Home")
    factors, peaks = [], []
    for _ in range(steps):
        factors.append(float(widget.locator("output").inner_text().split()[1]))
        peaks.append(max(float(c) for c in cells(widget.locator("table.qkv-attention"))[3:6]))  # bank's row
        page.keyboard.press("ArrowRight")
    assert factors == sorted(factors) and len(set(factors)) == steps, factors
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1], peaks
    assert "softer" in widget.locator(".qkv-range-end").first.inner_text()
    assert "sharper" in widget.locator(".qkv-range-end").last.inner_text()
    context.close()
    assert not problems, problems


def _first_quiz(browser, site_url, scheme):
    page, context, problems = open_page(browser, site_url + "chapters/embeddings/", scheme=scheme, width=1280)
    quiz = page.locator(".quiz[data-ready=true]").first
    right = quiz.get_attribute("data-answer")  # read by the script from "Answer: X"
    letters = [b.get_attribute("data-letter") for b in quiz.locator("button.qkv-choice").all()]
    assert right in letters and len(letters) >= 3, letters
    wrong = [letter for letter in letters if letter != right]
    return page, context, problems, quiz, right, wrong


def _shown(quiz) -> dict:
    """What the reader sees of a quiz: feedback, explanation, its style, the reveal button."""
    details = quiz.locator("details")
    return {
        # textContent, spaces collapsed: innerText sets inline maths (a hint's $E$) on lines of its own
        "feedback": " ".join(quiz.locator(".qkv-feedback").text_content().split()),
        "explained": details.is_visible(),
        "success": "success" in (details.get_attribute("class") or ""),
        "reveal": quiz.locator("button.qkv-reveal").is_visible(),
    }


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_wrong_pick_shows_its_hint_and_the_reader_tries_again(browser, site_url, scheme):
    """Wrong then right: the hint names the misconception, the answer stays hidden, then Correct."""
    page, context, problems, quiz, right, wrong = _first_quiz(browser, site_url, scheme)
    assert not quiz.locator("details").is_visible()  # hidden until the reader answers
    pick = quiz.locator(f"button[data-letter={wrong[0]}]")
    hint = " ".join(pick.get_attribute("data-hint").split())
    assert hint, f"choice {wrong[0]} of the first quiz has no hint"
    pick.click()
    shown = _shown(quiz)
    assert shown["feedback"].startswith(f"Not quite ({wrong[0]}). {hint}"), shown
    assert right not in shown["feedback"].split(")")[1].split() and not shown["explained"], shown
    assert "qkv-wrong" in pick.get_attribute("class") and not shown["reveal"], shown
    quiz.locator(f"button[data-letter={right}]").click()
    shown = _shown(quiz)
    assert shown["feedback"] == f"Correct: {right}." and shown["explained"] and shown["success"], shown
    context.close()
    assert not problems, problems


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_two_wrong_picks_offer_the_answer_never_styled_as_success(browser, site_url, scheme):
    page, context, problems, quiz, right, wrong = _first_quiz(browser, site_url, scheme)
    quiz.locator(f"button[data-letter={wrong[0]}]").click()
    assert not _shown(quiz)["reveal"]
    quiz.locator(f"button[data-letter={wrong[1]}]").click()
    shown = _shown(quiz)
    assert shown["reveal"] and not shown["explained"], shown
    quiz.locator("button.qkv-reveal").click()
    shown = _shown(quiz)
    assert shown["feedback"] == f"The answer is {right}." and shown["explained"], shown
    assert not shown["success"], "an answer the reader asked for is styled as a success"
    answer = quiz.locator(f"button[data-letter={right}]").get_attribute("class")
    assert "qkv-answer" in answer and "qkv-right" not in answer, answer
    context.close()
    assert not problems, problems


def test_a_quiz_works_from_the_keyboard_alone(browser, site_url):
    page, context, problems, quiz, right, wrong = _first_quiz(browser, site_url, "light")
    buttons = quiz.locator("button.qkv-choice")
    buttons.first.focus()
    letters = [b.get_attribute("data-letter") for b in buttons.all()]
    for letter in letters:  # Tab from choice to choice; Enter on the first wrong one, then the right one
        if letter == wrong[0]:
            page.keyboard.press("Enter")
            assert quiz.locator(".qkv-feedback").inner_text().startswith(f"Not quite ({letter})")
        page.keyboard.press("Tab")
    quiz.locator(f"button[data-letter={right}]").focus()
    page.keyboard.press("Enter")
    assert quiz.locator(".qkv-feedback").inner_text() == f"Correct: {right}."
    assert quiz.locator(".qkv-feedback").get_attribute("aria-live") == "polite"
    context.close()
    assert not problems, problems


# The layout shift and the overflow come from the one load of the widget's
# page per configuration (``sweep`` in conftest.py, tests/support/site_sweep.py).


@pytest.mark.parametrize("width_name", list(WIDTHS))
@pytest.mark.parametrize("name", list(WIDGET_PAGES))
def test_widgets_do_not_shift_the_layout(sweep, name, width_name):
    """From the first byte until the reader has scrolled (by wheel) to the
    widget and it has drawn itself, nothing on screen moves."""
    found = sweep.findings(WIDGET_PAGES[name], f"light-{width_name}").widgets[name]
    assert not found.missing, found.missing
    shift, problems = found.shift, found.problems
    assert shift < 0.02, f"cumulative layout shift {shift:.3f} on /{WIDGET_PAGES[name]}"
    assert not problems, problems


@pytest.mark.parametrize("name", list(WIDGET_PAGES))
@pytest.mark.parametrize("config", CONFIGS)
def test_widget_keeps_the_page_in_its_viewport(sweep, config, name):
    """The page with the widget drawn is no wider than the viewport."""
    width_name = config.split("-")[1]
    found = sweep.findings(WIDGET_PAGES[name], config).widgets[name]
    assert not found.missing, found.missing
    overflow, problems = found.overflow, found.problems
    assert overflow <= 0, f"{name} makes the page {overflow}px too wide at {WIDTHS[width_name]}px"
    assert not problems, problems
