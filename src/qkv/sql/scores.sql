-- Step 1, the scores: every query row meets every key row.
-- The join on dim pairs query[qpos, dim] with key[kpos, dim]; the SUM of
-- their products over a (qpos, kpos) group is the dot product. A group
-- holds one row per dimension, so COUNT(*) is d_k: the scale 1 / sqrt(d_k).
CREATE TEMP VIEW scores AS
SELECT q.pos AS qpos,
       k.pos AS kpos,
       SUM(q.val * k.val) / sqrt(COUNT(*)) AS score
FROM q
JOIN k ON k.dim = q.dim
GROUP BY q.pos, k.pos;
