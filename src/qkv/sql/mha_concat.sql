-- Step 6, the concatenation: the heads side by side again, head h's hdim
-- at the model dimension h * d_head + hdim. Rows are only renumbered.
CREATE TEMP VIEW concatenated AS
SELECT o.qpos AS pos, o.head * s.d_head + o.hdim AS dim, o.val
FROM head_output AS o
CROSS JOIN layer_shape AS s;
