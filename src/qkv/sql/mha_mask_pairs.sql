-- A mask is a table of the (head, query, key) triples it allows, the True
-- entries of a boolean mask broadcast to (num_heads, L_q, L_k), and the
-- scores are joined with it.
CREATE TEMP TABLE head_allowed (
  head INTEGER NOT NULL,
  qpos INTEGER NOT NULL,
  kpos INTEGER NOT NULL,
  PRIMARY KEY (head, qpos, kpos)
);
CREATE TEMP VIEW head_visible AS
SELECT s.head, s.qpos, s.kpos, s.score
FROM head_scores AS s
JOIN head_allowed AS a ON a.head = s.head AND a.qpos = s.qpos AND a.kpos = s.kpos;
