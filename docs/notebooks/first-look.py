# %% [markdown]
# # A first look, as a notebook
#
# This page is a notebook: the site executes it every time it is built, and
# a cell that raises fails the build. It also shows that math renders on
# notebook pages: the encoding of position $pos$ in dimension $2i$ is
#
# $$PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{\text{model}}}}\right)$$
#
# and the odd dimension $2i+1$ takes the cosine of the same angle.

# %%
import inspect

import qkv

pe = qkv.sinusoidal_encoding(4, 6)  # (4 positions, d_model = 6)
print(pe.round(4))
print("base:", inspect.signature(qkv.sinusoidal_encoding).parameters["base"].default)

# %% [markdown]
# Every row has the same length, $\sqrt{d/2}$, because each pair of
# dimensions contributes $\sin^2 + \cos^2 = 1$:

# %%
import numpy as np

print(np.linalg.norm(pe, axis=1).round(4), np.sqrt(6 / 2).round(4))
