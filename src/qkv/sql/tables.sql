-- The inputs in long form: one row per (position, dimension), so that
-- q holds query[pos, dim] in val, and k and v likewise hold key and value.
-- DOUBLE PRECISION, not REAL: REAL is a 4-byte float in PostgreSQL and
-- DuckDB and would keep only about 7 digits.
CREATE TEMP TABLE q (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
CREATE TEMP TABLE k (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
CREATE TEMP TABLE v (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
