-- Step 7, the output projection concatenated @ W_o.T + b_o: step 1's join
-- and GROUP BY once more (mixed), then the bias. A head in which a query
-- saw no key gave it no rows, which count as 0, as in qkv; a query that
-- saw no key in any head has no mixed rows at all, so the LEFT JOIN from
-- every (query, out_dim) cell keeps its row, which is b_o alone. The test
-- is on mixed.pos, never NULL in a row that exists: SQLite returns a NaN
-- val as NULL, and that must not pass for a missing row.
CREATE TEMP VIEW mha_output AS
WITH mixed AS (
  SELECT c.pos, w.out_dim AS dim, SUM(c.val * w.val) AS val
  FROM concatenated AS c
  JOIN out_proj AS w ON w.in_dim = c.dim
  GROUP BY c.pos, w.out_dim
), cells AS (
  SELECT positions.pos, b.out_dim AS dim, b.val AS bias
  FROM (SELECT DISTINCT pos FROM query_in) AS positions
  CROSS JOIN out_bias AS b
)
SELECT cells.pos, cells.dim,
       CASE WHEN mixed.pos IS NULL THEN cells.bias
            ELSE mixed.val + cells.bias END AS val
FROM cells
LEFT JOIN mixed ON mixed.pos = cells.pos AND mixed.dim = cells.dim;
