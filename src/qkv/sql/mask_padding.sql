-- Padding is a join with the real tokens: one row per key position,
-- valid = FALSE for the filler at the end of a short sentence. A padding
-- key drops out of every query's row.
CREATE TEMP TABLE tokens (
  pos INTEGER NOT NULL PRIMARY KEY,
  valid BOOLEAN NOT NULL
);
CREATE TEMP VIEW visible AS
SELECT scores.qpos, scores.kpos, scores.score
FROM scores
JOIN tokens ON tokens.pos = scores.kpos
WHERE tokens.valid;
