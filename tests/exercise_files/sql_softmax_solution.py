"""Exercise 3, a correct answer: two windows, each query's maximum subtracted."""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - MAX(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos) AS weight
    FROM shifted
    """
