"""The widgets' JSON, without a browser: everything the script states or
starts at is in the data the build writes from qkv (docs/chapters/*.py,
@widget), so docs/javascripts/qkv.js holds no number of its own."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import parts  # docs/hooks, on pytest's pythonpath
import qkv

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "docs" / "chapters"


def widget_data(page: str, name: str) -> dict:
    return parts.load_page(CHAPTERS / page).widgets[name].data()


def companion(page: str):
    parts.load_page(CHAPTERS / page)
    return sys.modules[parts.COMPANION_PREFIX + "chapters_" + page[:-3].replace("-", "_")]


def test_token_vectors_states_the_tables_sizes():
    data = widget_data("embeddings.md", "token-vectors")
    assert data["vocab_size"] == len(qkv.toy.VOCAB) == len(data["vocab"])
    assert data["d_model"] == qkv.toy.EMBEDDINGS.shape[1] == len(data["axes"])


def test_the_attention_slider_starts_at_the_papers_scale():
    data = widget_data("attention.md", "attention")
    steps = data["scale_steps"]
    start = steps[data["start_step"]]
    assert start["kind"] == "paper"
    assert math.isclose(start["factor"], 1 / math.sqrt(qkv.toy.W_KEY.shape[1]))
    assert [s["kind"] for s in steps].count("paper") == 1
    for step in steps:
        assert step["kind"] == "paper" or step["kind"] == (
            "unscaled" if step["factor"] == 1 else "sharper" if step["factor"] > 1 else "softer"
        )
        for sentence in data["sentences"]:
            assert step["key"] in sentence["by_scale"]


def test_scales_without_the_papers_factor_are_refused(monkeypatch):
    module = companion("attention.md")
    monkeypatch.setattr(module, "ATTENTION_SCALES", (4.0, 2.0, 1.0, 0.25))
    with pytest.raises(ValueError) as caught:
        module.attention()
    assert str(caught.value) == (
        "ATTENTION_SCALES must contain the paper's scale 1/sqrt(d_k) = 0.5 for d_k = 4, got (4.0, 2.0, 1.0, 0.25)"
    )


def test_the_positions_widget_starts_where_its_data_allows():
    data = widget_data("sinusoidal.md", "positions")
    start = data["start"]
    assert str(start["width"]) in data["tables"] and start["rows"] in data["row_counts"]
    assert 0 <= start["position"] < start["rows"] and 0 <= start["word"] < len(data["sentence"]["words"])
    assert max(data["row_counts"]) <= data["max_positions"]


def test_a_start_outside_the_data_is_refused(monkeypatch):
    module = companion("sinusoidal.md")
    monkeypatch.setattr(module, "PE_START", {"width": 12, "rows": 32, "position": 1, "word": 1})
    with pytest.raises(ValueError, match=r"PE_START must pick a width from \(4, 6, 8, 16, 32, 64\)"):
        module.positions()
