-- The causal mask is a predicate: a query sees its own position and the
-- ones before it, never the future.
CREATE TEMP VIEW visible AS
SELECT qpos, kpos, score
FROM scores
WHERE kpos <= qpos;
