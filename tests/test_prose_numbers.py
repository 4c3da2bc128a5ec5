"""Every number in the prose of every page is checked (see prose_numbers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prose_numbers import unchecked_numbers

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_number_in_prose_is_checked(page):
    problems = unchecked_numbers(page)
    assert not problems, "\n".join(problems)


def write(tmp_path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


def test_an_unchecked_number_is_named_with_its_line(tmp_path):
    page = write(tmp_path, "# t\n\nThe answer is 0.9985.\n\nAnd 18,944,000 numbers.\n")
    assert unchecked_numbers(page) == [
        f"{page}:3: 0.9985 is not in any verified output",
        f"{page}:5: 18,944,000 is not in any verified output",
    ]


def test_a_number_in_a_verified_output_is_checked(tmp_path):
    text = (
        "# t\n\nKitten scores 0.9985, or about 1.00 (rounded), and 18,944,000.\n\n"
        "```python\nprint(0.998462, f'{37000 * 512:,}')\n```\n\n```output\n0.998462 18,944,000\n```\n"
    )
    assert unchecked_numbers(write(tmp_path, text)) == []


def test_output_without_code_above_does_not_count(tmp_path):
    # An output block that no code produced is not verified by anything.
    text = "# t\n\nIt is 0.9985.\n\n```output\n0.9985\n```\n"
    assert len(unchecked_numbers(write(tmp_path, text))) == 1


def test_wrong_rounding_is_not_accepted(tmp_path):
    # The classic slip: 0.0022 printed as 0.01, and 0.0464 truncated to 0.04.
    text = "# t\n\nWrong: 0.01 and 0.04.\n\n```python\nprint(0.0022, 0.0464)\n```\n\n```output\n0.0022 0.0464\n```\n"
    problems = unchecked_numbers(write(tmp_path, text))
    assert [p.split(": ")[1] for p in problems] == ["0.01 is not in any verified output", "0.04 is not in any verified output"]


def test_exempt_forms(tmp_path):
    text = (
        "# t\n\nPositions 0-3, d = 512, Table 3, the year 2017, one decimal 2.5, "
        "[paper](https://arxiv.org/abs/1706.03762), arXiv:1706.03762, {{ wavelength_last_pair_d512 }}.\n"
        "<!-- 0.1234 in a comment -->\n\n```python\nx = 0.5555\n```\n"
    )
    assert unchecked_numbers(write(tmp_path, text)) == []
