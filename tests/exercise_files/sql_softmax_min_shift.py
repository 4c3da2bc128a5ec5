"""Exercise 3, a classic mistake: each query's minimum subtracted, not its maximum.

Right on paper (any shift cancels) and on small spreads, wrong once a row's
maximum is more than about 709 above its minimum: exp(max - min) is inf.
"""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - MIN(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
