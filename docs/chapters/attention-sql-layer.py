"""Parts of docs/chapters/attention-sql-layer.md (chapter 9b) computed when the site is built.

The page's SQL blocks are the package's ``mha_*.sql`` files, the same text
``qkv.sql.multi_head_attention`` runs (docs/hooks/sql_blocks.py, one home
with chapter 9), and the rows of the toy layer they load: "money bank
grows" with chapter 5's matrices, two heads and W_O = I, as in chapter 7.
The plans of the projection join in PostgreSQL and DuckDB come from the
committed result file of ``make plans-sql`` (benchmarks/results/), as
chapter 9's do: not every reader has a PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import qkv
from parts import value
from sql_blocks import compact, in_box, insert_long_form, sql_block, statements

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
BANK = ("money", "bank", "grows")
NUM_HEADS = 2


def toy_layer() -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """x, num_heads, in_proj_weight [W_q; W_k; W_v] (torch's layout, x @ W.T) and W_O = I."""
    x = qkv.toy.bank_sentence(list(BANK))  # (3, 4)
    in_proj = np.concatenate([qkv.toy.W_QUERY.T, qkv.toy.W_KEY.T, qkv.toy.W_VALUE.T])  # (12, 4)
    return x, NUM_HEADS, in_proj, np.eye(x.shape[1])


@value("sql_layer_tables")
def sql_layer_tables() -> str:
    """mha_tables.sql, then the toy layer's rows: x three times (self-attention), the weights, zero biases."""
    x, num_heads, in_proj, out_proj = toy_layer()
    d_model = x.shape[1]
    weight = ("out_dim", "in_dim", "val")
    inserts = [
        insert_long_form("query_in", x),
        "INSERT INTO key_in SELECT * FROM query_in;",
        "INSERT INTO value_in SELECT * FROM query_in;",
        insert_long_form("in_proj", in_proj, weight),
        insert_long_form("in_bias", np.zeros(3 * d_model), ("out_dim", "val")),
        insert_long_form("out_proj", out_proj, weight),
        insert_long_form("out_bias", np.zeros(d_model), ("out_dim", "val")),
        f"INSERT INTO layer_shape (d_model, d_head) VALUES ({d_model}, {d_model // num_heads});",
    ]
    return in_box(sql_block(compact(statements("mha_tables")) + "\n" + "\n".join(inserts)))  # in a Deeper box


for _name in ("mha_project", "mha_split", "mha_weights", "mha_output"):
    value("sql_layer_" + _name.removeprefix("mha_"))(lambda _name=_name: sql_block(statements(_name)))


@value("sql_layer_scores")
def sql_head_scores() -> str:
    """mha_scores.sql, then mha_mask_none.sql: every head's scores, all visible (one runnable block)."""
    return sql_block(statements("mha_scores") + "\n" + statements("mha_mask_none"))


@value("sql_layer_concat")
def sql_concat() -> str:
    """mha_weighted_sum.sql, then mha_concat.sql: each head's output, then the heads side by side."""
    return sql_block(statements("mha_weighted_sum") + "\n" + statements("mha_concat"))


def _layer_plans() -> dict:
    data = json.loads((RESULTS / "sql-plans.json").read_text(encoding="utf-8"))
    if not data.get("layer_plans"):
        raise KeyError("sql-plans.json has no layer_plans: run make plans-sql")
    return data


@value("layer_plan_postgresql")
def layer_plan_postgresql() -> str:
    """PostgreSQL's plan of the projection join, lines numbered for the reading (in a Deeper box)."""
    lines = _layer_plans()["layer_plans"][0]["plans"]["PostgreSQL"].splitlines()
    return in_box("```text\n" + "\n".join(f"{n:>2} {line}" for n, line in enumerate(lines, 1)) + "\n```")


@value("layer_plans_made")
def layer_plans_made() -> str:
    data = _layer_plans()
    entry = data["layer_plans"][0]
    return (
        f"`{data['command']}` on {data['date'][:10]} (PostgreSQL {data['versions']['postgresql']}), "
        f"for a random layer of L = {entry['L']}, d_model = {entry['d_model']} and {entry['heads']} heads"
    )
