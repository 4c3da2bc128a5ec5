"""Exercise 3, a classic mistake: OVER () is one softmax over every query's scores."""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - MAX(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER () AS weight
    FROM shifted
    """
