-- The layer's inputs in long form, one value per row. query_in, key_in and
-- value_in hold the input rows: query[pos, dim] is the row (pos, dim, val).
-- in_proj holds the packed [W_q; W_k; W_v] as torch lays it out, shape
-- (3 d_model, d_model): W[out_dim, in_dim] is a row, W_q the first d_model
-- values of out_dim, then W_k, then W_v. in_bias is [b_q; b_k; b_v] by
-- out_dim (zeros when the layer has none). out_proj and out_bias are W_o
-- and b_o. layer_shape is one row: the model width and one head's width.
CREATE TEMP TABLE query_in (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
CREATE TEMP TABLE key_in (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
CREATE TEMP TABLE value_in (
  pos INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (pos, dim)
);
CREATE TEMP TABLE in_proj (
  out_dim INTEGER NOT NULL,
  in_dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (out_dim, in_dim)
);
CREATE TEMP TABLE in_bias (
  out_dim INTEGER NOT NULL PRIMARY KEY,
  val DOUBLE PRECISION NOT NULL
);
CREATE TEMP TABLE out_proj (
  out_dim INTEGER NOT NULL,
  in_dim INTEGER NOT NULL,
  val DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (out_dim, in_dim)
);
CREATE TEMP TABLE out_bias (
  out_dim INTEGER NOT NULL PRIMARY KEY,
  val DOUBLE PRECISION NOT NULL
);
CREATE TEMP TABLE layer_shape (
  d_model INTEGER NOT NULL,
  d_head INTEGER NOT NULL
);
