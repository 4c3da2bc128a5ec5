-- Any other mask is a table of the (query, key) pairs it allows, the
-- True entries of a boolean mask, and the scores are joined with it.
CREATE TEMP TABLE allowed (
  qpos INTEGER NOT NULL,
  kpos INTEGER NOT NULL,
  PRIMARY KEY (qpos, kpos)
);
CREATE TEMP VIEW visible AS
SELECT scores.qpos, scores.kpos, scores.score
FROM scores
JOIN allowed ON allowed.qpos = scores.qpos AND allowed.kpos = scores.kpos;
