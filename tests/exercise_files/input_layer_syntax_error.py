"""Does not even parse (input-layer)."""

def one_hot(token_ids, vocab_size)
    return None
