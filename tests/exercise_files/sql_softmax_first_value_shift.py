"""Exercise 3, a classic mistake: each query's first score subtracted, not its maximum.

Right on paper (any shift cancels), and right whenever a row's largest score
is its first key's; wrong once the first score is more than about 709 below
the row's maximum.
"""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - FIRST_VALUE(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
