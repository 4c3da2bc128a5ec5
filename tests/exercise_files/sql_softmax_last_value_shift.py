"""Exercise 3, a classic mistake: each query's last score subtracted, not its maximum.

Right on paper (any shift cancels), and right whenever a row's largest score
is its last key's, as in a row [-2000, -2000, 0]; wrong once the last score
is more than about 709 below the row's maximum.
"""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - LAST_VALUE(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
