"""Exercise 3, a classic mistake: each query's average subtracted, not its maximum.

Right on paper (any shift cancels) and on the bank sentence, wrong once a
row's scores spread more than about 709 above their average.
"""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - AVG(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
