-- No mask: every query may attend to every key.
CREATE TEMP VIEW visible AS
SELECT qpos, kpos, score
FROM scores;
