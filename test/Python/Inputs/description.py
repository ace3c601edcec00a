"""muir.description: which optimizer each parameter gets, and a JSON
description muir-compile reads (names quoted whatever they hold)."""
import sys

from muir import description as d

PARAMS = [
    ("model.embed_tokens.weight", (64, 16)),
    ("layers.0.q.weight", (16, 16)),
    ("layers.0.experts.up", (4, 32, 16)),
    ("layers.0.norm.weight", (16,)),
    ("scale", ()),
    ("conv.weight", (2, 2, 3, 3)),
    ("lm_head.weight", (64, 16)),
    ('odd "name" \\ with: yaml, {chars}', (8, 4)),
    ("head", (64, 16)),
    ("layers.0.headless.weight", (16, 16)),
]
for name, shape in PARAMS:
    print("assign %s %s: %s %s" % (name, list(shape),
                                   *d.assign(name, shape)))
with open(sys.argv[1], "w") as f:
    f.write(d.describe(PARAMS, lr=0.01, adamw_lr=0.002, weight_decay=0.1,
                       devices=int(sys.argv[2]) if len(sys.argv) > 2 else 1))
