-- Step 5, each head's output: output.sql's weighted GROUP BY, joining the
-- weights with the value rows of the same head. A query whose keys are all
-- masked in a head has no weights there, so it gets no rows from that head.
CREATE TEMP VIEW head_output AS
SELECT w.head, w.qpos, v.hdim, SUM(w.weight * v.val) AS val
FROM head_weights AS w
JOIN v_heads AS v ON v.head = w.head AND v.pos = w.kpos
GROUP BY w.head, w.qpos, v.hdim;
