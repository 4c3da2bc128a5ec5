"""Exercise 3, a classic mistake: ORDER BY in the window makes the sum a running sum."""


def softmax_query():
    return """
    WITH shifted AS (
      SELECT qpos, kpos, exp(score - MAX(score) OVER (PARTITION BY qpos)) AS e
      FROM scores
    )
    SELECT qpos, kpos, e / SUM(e) OVER (PARTITION BY qpos ORDER BY kpos) AS weight
    FROM shifted
    """
