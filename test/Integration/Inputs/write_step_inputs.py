"""Writes parameters and gradients for Distributed/duplicated.test."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
for name, shape in [("q_proj", (64, 32)), ("o_proj", (32, 64)),
                    ("norm", (32,)), ("experts.up_proj", (4, 16, 32))]:
    np.save(os.path.join(out, name + ".npy"),
            (rng.standard_normal(shape) * 0.02).astype(np.float32))
    np.save(os.path.join(out, name + ".grad.npy"),
            rng.standard_normal(shape).astype(np.float32))
