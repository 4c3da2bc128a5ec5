-- No mask: in every head every query may attend to every key.
CREATE TEMP VIEW head_visible AS
SELECT head, qpos, kpos, score
FROM head_scores;
