-- Step 2, the softmax: two window aggregates over each query's row.
-- Subtracting the row's MAX first keeps exp() from overflowing and leaves
-- the weights unchanged. A key more than 300 below the row's best gets
-- weight 0 outright: its exact weight is below exp(-300), about 5e-131, and
-- PostgreSQL raises "value out of range: underflow" where a float result
-- rounds to 0 (exp() below about -745) instead of returning 0 as SQLite
-- and DuckDB do. The test is score < max_score - 300, not
-- score - max_score < -300: CASE computes only the branch it takes, so
-- score - max_score is never formed for such a key, and a gap past
-- float64's range (scores 1.7e308 and -1.7e308) cannot overflow either.
CREATE TEMP VIEW weights AS
WITH row_max AS (
  SELECT qpos, kpos, score,
         MAX(score) OVER (PARTITION BY qpos) AS max_score
  FROM visible
), exps AS (
  SELECT qpos, kpos,
         CASE WHEN score < max_score - 300 THEN 0.0
              ELSE exp(score - max_score) END AS e
  FROM row_max
)
SELECT qpos, kpos,
       e / SUM(e) OVER (PARTITION BY qpos) AS weight
FROM exps;
