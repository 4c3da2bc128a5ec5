-- Step 3, the output: each query's blend of the value rows, a weighted
-- GROUP BY. Join the weights with v on the key position and sum
-- weight * val per (query, dimension). A query whose keys are all masked
-- has no weights, so it gets no output rows.
CREATE TEMP VIEW output AS
SELECT weights.qpos, v.dim, SUM(weights.weight * v.val) AS val
FROM weights
JOIN v ON v.pos = weights.kpos
GROUP BY weights.qpos, v.dim;
