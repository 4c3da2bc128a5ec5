"""Exercise 3, a classic mistake: the maximum of all scores, not each query's."""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - MAX(score) OVER ()) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
