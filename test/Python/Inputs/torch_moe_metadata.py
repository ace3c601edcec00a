"""The records of the experts an expert stack holds ("muir_experts":
[lo, hi, experts]) in muir.torch.MoE's and muir.torch.Muon's state_dicts
are checked before they decide which rows load: three integers (not bools,
floats or strings) with 0 <= lo < hi <= experts. A bad one is refused,
naming the layer (a RuntimeError from Module.load_state_dict) or the
parameter (a ValueError from the optimizer's), and nothing of it loads;
a good one loads the rows it names, bitwise.
"""
import copy

import numpy as np
import torch

import muir.torch as mt

H, F, E, K = 16, 24, 4, 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.moe = mt.MoE(hidden=H, expert_size=F, experts=E, top_k=K,
                          name="blocks.0.moe")


def model_state(rows, record):
    """A state_dict of Net whose gate_proj holds `rows` (a tensor whose
    dimension 0 is experts) and records `record`."""
    torch.manual_seed(1)
    sd = Net().state_dict()
    sd["moe.gate_proj"] = rows
    sd._metadata["moe"]["muir_experts"] = record
    return sd


torch.manual_seed(0)
net = Net()
before = net.moe.gate_proj.detach().clone()
g = torch.Generator().manual_seed(7)
# Another model's stack: 5 experts' rows.
five = torch.randn(5, F, H, generator=g)
four = torch.randn(4, F, H, generator=g)

# Refused: each record names the layer and leaves gate_proj unchanged.
for what, rows, record in (
        ("lo -1", five, [-1, 4, 4]),
        ("floats", four, [0.5, 4.7, 4]),
        ("string", four, "abc"),
        ("two values", four, [0, 4]),
        ("bools", four, [False, True, 4]),
        ("hi past experts", five, [0, 5, 4]),
        ("empty range", four, [2, 2, 4]),
        ("None values", four, [None, 4, 4])):
    try:
        net.load_state_dict(model_state(rows, record))
        print("model %s: NOT refused (gate_proj row 0 %s)"
              % (what, "replaced" if not torch.equal(
                  net.moe.gate_proj[0], before[0]) else "kept"))
    except RuntimeError as e:
        line = [m for m in str(e).splitlines() if "muir.torch.MoE" in m]
        print("model %s: %s" % (what, line[0].strip() if line else e))
    print("model %s: gate_proj unchanged %s"
          % (what, torch.equal(net.moe.gate_proj, before)))

# Loaded: a good record (also of NumPy integers, as a state_dict read back
# from NumPy may hold) loads its rows bitwise.
for what, record in (("ints", [0, 4, 4]),
                     ("numpy ints", [np.int64(0), np.int64(4),
                                     np.int64(4)])):
    net.load_state_dict(model_state(four, record))
    print("model %s: loaded, gate_proj equals the saved rows %s"
          % (what, torch.equal(net.moe.gate_proj, four)))

# The optimizer's records ("muir_experts": parameter index -> record).
torch.manual_seed(0)
net = Net()
opt = mt.Muon(net.named_parameters(), lr=0.02, cache_dir=None)
x = torch.randn(8, H, generator=g)
net.moe(x).square().sum().backward()
opt.step()
params = [p for group in opt.param_groups for p in group["params"]]
index = next(i for i, p in enumerate(params) if p is net.moe.gate_proj)
sd = opt.state_dict()
print("optimizer record of gate_proj: %s" % sd["muir_experts"][index])
kept = copy.deepcopy(opt.state_dict())
for what, record in (("lo -1", [-1, 4, 4]), ("floats", [0.5, 4.7, 4]),
                     ("string", "abc"), ("hi past experts", [0, 5, 4]),
                     ("bools", [0, True, 4])):
    bad = copy.deepcopy(sd)
    bad["muir_experts"][index] = record
    try:
        opt.load_state_dict(bad)
        print("optimizer %s: NOT refused" % what)
    except ValueError as e:
        print("optimizer %s: %s" % (what, e))
bad = copy.deepcopy(sd)
bad["muir_experts"] = "abc"
try:
    opt.load_state_dict(bad)
    print("optimizer muir_experts a string: NOT refused")
except ValueError as e:
    print("optimizer muir_experts a string: %s" % e)
now = opt.state_dict()
print("optimizer state unchanged after the refusals %s" % all(
    torch.equal(now["state"][i][k], kept["state"][i][k])
    for i in kept["state"] for k in kept["state"][i]
    if isinstance(kept["state"][i][k], torch.Tensor)))
good = copy.deepcopy(sd)
good["state"][index]["momentum_buffer"] = four.clone()
opt.load_state_dict(good)
print("optimizer good record: momentum equals the saved rows %s"
      % torch.equal(opt.state[net.moe.gate_proj]["momentum_buffer"], four))
