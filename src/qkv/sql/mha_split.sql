-- Step 2, the split into heads: head h owns the model dimensions
-- h * d_head .. (h + 1) * d_head - 1, and hdim is a dimension's place in
-- its head. head is dim / d_head rounded down, written
-- (dim - dim % d_head) / d_head: a whole number divided exactly, so that
-- the CAST only turns DuckDB's float quotient of two integers back into an
-- integer (SQLite and PostgreSQL divide integers to an integer).
CREATE TEMP VIEW q_heads AS
SELECT CAST((p.dim - p.dim % s.d_head) / s.d_head AS INTEGER) AS head,
       p.pos, p.dim % s.d_head AS hdim, p.val
FROM q_proj AS p
CROSS JOIN layer_shape AS s;
CREATE TEMP VIEW k_heads AS
SELECT CAST((p.dim - p.dim % s.d_head) / s.d_head AS INTEGER) AS head,
       p.pos, p.dim % s.d_head AS hdim, p.val
FROM k_proj AS p
CROSS JOIN layer_shape AS s;
CREATE TEMP VIEW v_heads AS
SELECT CAST((p.dim - p.dim % s.d_head) / s.d_head AS INTEGER) AS head,
       p.pos, p.dim % s.d_head AS hdim, p.val
FROM v_proj AS p
CROSS JOIN layer_shape AS s;
