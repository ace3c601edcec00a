"""Writes an m x n float32 .npy of small integers in [-3, 3] (fixed seed):
values for which fp32 sums and products in the distributed tests are exact."""
import sys

import numpy as np

path, m, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1234)
np.save(path, rng.integers(-3, 4, size=(m, n)).astype(np.float32))
