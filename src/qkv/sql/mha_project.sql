-- Step 1, the projections x @ W.T + b, each a join and a GROUP BY.
-- An input row (pos, dim) meets the weight rows whose in_dim is that dim;
-- the SUM of their products over a (pos, out_dim) group is one entry of
-- x @ W.T, and the bias of that out_dim is added to it. The packed in_proj
-- is cut by ranges of out_dim: W_q is 0 .. d_model - 1, W_k the next
-- d_model, W_v the last d_model; subtracting a range's start gives the
-- projected row's dim.
CREATE TEMP VIEW q_proj AS
SELECT x.pos, w.out_dim AS dim, SUM(x.val * w.val) + b.val AS val
FROM query_in AS x
JOIN in_proj AS w ON w.in_dim = x.dim
JOIN in_bias AS b ON b.out_dim = w.out_dim
CROSS JOIN layer_shape AS s
WHERE w.out_dim < s.d_model
GROUP BY x.pos, w.out_dim, b.val;
CREATE TEMP VIEW k_proj AS
SELECT x.pos, w.out_dim - s.d_model AS dim, SUM(x.val * w.val) + b.val AS val
FROM key_in AS x
JOIN in_proj AS w ON w.in_dim = x.dim
JOIN in_bias AS b ON b.out_dim = w.out_dim
CROSS JOIN layer_shape AS s
WHERE w.out_dim >= s.d_model AND w.out_dim < 2 * s.d_model
GROUP BY x.pos, w.out_dim, s.d_model, b.val;
CREATE TEMP VIEW v_proj AS
SELECT x.pos, w.out_dim - 2 * s.d_model AS dim, SUM(x.val * w.val) + b.val AS val
FROM value_in AS x
JOIN in_proj AS w ON w.in_dim = x.dim
JOIN in_bias AS b ON b.out_dim = w.out_dim
CROSS JOIN layer_shape AS s
WHERE w.out_dim >= 2 * s.d_model
GROUP BY x.pos, w.out_dim, s.d_model, b.val;
