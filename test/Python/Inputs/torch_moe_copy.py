"""A model holding a muir.torch.MoE is copied as PyTorch objects are, also
after a forward and backward (which compile the layer's passes, handles
into muir's library): copy.deepcopy, a pickle round trip, torch.save /
torch.load and torch.optim.swa_utils.AveragedModel. Each copy compiles its
own passes when it runs; its forward and every gradient equal the
original's bitwise (the reference: the original layer, whose passes are
the same objects as before the copies); its parameters keep their marks
for muir.torch.Muon (the router takes AdamW, the stacks record their
experts in state_dict).
"""
import copy
import io
import pickle

import torch

import muir.torch as mt

H, F, E, K = 16, 24, 4, 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(H, H)
        self.moe = mt.MoE(hidden=H, expert_size=F, experts=E, top_k=K,
                          shared_experts=1, capacity_factor=1.5)

    def forward(self, x):
        return self.moe(torch.tanh(self.proj(x)))


def forward_backward(net, x):
    """y and every parameter's gradient (fresh: the grads are cleared)."""
    net.zero_grad(set_to_none=True)
    y = net(x)
    (y * torch.linspace(-1, 1, y.numel()).reshape(y.shape)).sum().backward()
    return y.detach().clone(), {n: p.grad.clone()
                                for n, p in net.named_parameters()}


def same(a, b):
    (ya, ga), (yb, gb) = a, b
    return torch.equal(ya, yb) and ga.keys() == gb.keys() and \
        all(torch.equal(ga[n], gb[n]) for n in ga)


torch.manual_seed(0)
net = Net()
g = torch.Generator().manual_seed(1)
x = torch.randn(37, H, generator=g)
first = forward_backward(net, x)
passes = dict(net.moe._passes)
print("original: %d compiled passes after a forward and backward"
      % len(passes))
reference = forward_backward(net, x)
print("original: forward and backward repeat bitwise %s"
      % same(first, reference))


def saved_and_loaded(model):
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    # A whole module is a pickle of its classes: torch >= 2.6 loads it only
    # with weights_only=False (the state dicts of the other tests load with
    # the default, weights_only=True).
    return torch.load(buf, weights_only=False)


copies = (("copy.deepcopy", lambda: copy.deepcopy(net)),
          ("pickle", lambda: pickle.loads(pickle.dumps(net))),
          ("torch.save/load", lambda: saved_and_loaded(net)),
          ("AveragedModel", lambda: torch.optim.swa_utils.AveragedModel(
              net).module))
for what, make in copies:
    c = make()
    print("%s: the copy holds %d compiled passes" % (what,
                                                     len(c.moe._passes)))
    got = forward_backward(c, x)
    print("%s: forward and gradients bitwise the original's %s"
          % (what, same(got, reference)))
    print("%s: its own passes %s" % (what, len(c.moe._passes) == 2 and not
                                     any(p is q for p in c.moe._passes.values()
                                         for q in passes.values())))
    print("%s: router takes %s; state_dict records experts %s"
          % (what, c.moe.router._muir_optimizer,
             c.state_dict()._metadata["moe"]["muir_experts"]))
    opt = mt.Muon(c.named_parameters(), lr=0.02, cache_dir=None)
    names = {p: n for n, p in c.named_parameters()}
    print("%s: Muon's AdamW group: %s" % (what, ", ".join(
        names[p] for p in opt.param_groups[1]["params"])))

print("original: the same passes after the copies %s" % (
    net.moe._passes.keys() == passes.keys() and
    all(net.moe._passes[k] is passes[k] for k in passes)))
print("original: forward and backward still bitwise %s"
      % same(forward_backward(net, x), reference))

# AveragedModel over training: after a step of the original, the average
# (first update: a copy of the parameters) runs the original's forward.
swa = torch.optim.swa_utils.AveragedModel(net)
opt = mt.Muon(net.named_parameters(), lr=0.02, cache_dir=None)
forward_backward(net, x)
opt.step()
swa.update_parameters(net)
with torch.no_grad():
    print("AveragedModel after update_parameters: forward bitwise the "
          "stepped original's %s" % torch.equal(swa(x), net(x)))
