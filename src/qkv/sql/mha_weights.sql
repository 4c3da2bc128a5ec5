-- Step 4, the softmax of every head: weights.sql's two window aggregates,
-- each over one query's row in one head, PARTITION BY head, qpos. The
-- row's MAX is subtracted first, and a key more than 300 below it gets
-- weight 0 outright, for the reasons weights.sql gives.
CREATE TEMP VIEW head_weights AS
WITH row_max AS (
  SELECT head, qpos, kpos, score,
         MAX(score) OVER (PARTITION BY head, qpos) AS max_score
  FROM head_visible
), exps AS (
  SELECT head, qpos, kpos,
         CASE WHEN score < max_score - 300 THEN 0.0
              ELSE exp(score - max_score) END AS e
  FROM row_max
)
SELECT head, qpos, kpos,
       e / SUM(e) OVER (PARTITION BY head, qpos) AS weight
FROM exps;
