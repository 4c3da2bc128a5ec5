-- Step 3, the scores of every head at once: chapter 9's scores.sql with
-- head added to the join and to the GROUP BY, so that a query row meets
-- only the key rows of its own head. A (head, qpos, kpos) group holds one
-- row per dimension of the head, so COUNT(*) is d_head: the scale
-- 1 / sqrt(d_head).
CREATE TEMP VIEW head_scores AS
SELECT q.head,
       q.pos AS qpos,
       k.pos AS kpos,
       SUM(q.val * k.val) / sqrt(COUNT(*)) AS score
FROM q_heads AS q
JOIN k_heads AS k ON k.head = q.head AND k.hdim = q.hdim
GROUP BY q.head, q.pos, k.pos;
