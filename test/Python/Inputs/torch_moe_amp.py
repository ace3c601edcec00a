"""muir.torch.MoE in mixed-precision training (torch 2.x): bfloat16 and
float16 tokens, tokens under torch.autocast (bfloat16 and float16), and
bfloat16 parameters. With float32 products the layer computes in float32
and rounds once, so
every output and gradient must be exactly the float32 layer's, run on the
same values read as float32, rounded to the dtype it is returned in (the
float32 layer itself is checked against a float64 reference in
torch-moe.test). Also: a bfloat16 layer trains with muir.torch.Muon (its
parameters stay bfloat16, the loss falls), and a dtype the layer does not
take is refused.
"""
import copy

import torch

import muir.torch as mt
import torchtest

torch.manual_seed(0)
failures = torchtest.Failures("torch-moe-amp", verbose=True)


def check(what, ok):
    failures.check(ok, what)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))


H, I, E, K, T = 32, 24, 8, 2, 40
# products="float32": exact float32 products under autocast(bfloat16) and
# for bfloat16 parameters too, where the default takes bfloat16 ones
# (torch-moe-bf16.test).
layer = mt.MoE(hidden=H, expert_size=I, experts=E, top_k=K, shared_experts=1,
               aux_loss_coef=0.01, products="float32")


def run(net, x, dy):
    """y, aux loss, dx and every parameter's gradient (None-safe)."""
    x = x.detach().clone().requires_grad_(True)
    for p in net.parameters():
        p.grad = None
    y, aux = net(x)
    ((y * dy).sum() + aux).backward()
    return y.detach(), aux.detach(), x.grad, \
        {n: p.grad for n, p in net.named_parameters()}


x32 = torch.randn(2, T // 2, H)
for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
    x = x32.to(dtype)
    dy = torch.randn(2, T // 2, H).to(dtype)
    y, aux, dx, grads = run(layer, x, dy)
    # The float32 layer on the same values (a bfloat16 or float16 value is
    # a float32 one exactly).
    y_ref, aux_ref, dx_ref, grads_ref = run(layer, x.float(), dy.float())
    check("%s x: y is the float32 layer's rounded to %s" % (name, name),
          same(y, y_ref.to(dtype)))
    check("%s x: dx is the float32 layer's rounded to %s" % (name, name),
          same(dx, dx_ref.to(dtype)))
    check("%s x: parameter gradients (float32) are the float32 layer's"
          % name, all(same(grads[n], grads_ref[n]) for n in grads))
    check("%s x: aux loss is the float32 layer's" % name, same(aux, aux_ref))

    # torch.autocast: float32 tokens, outputs of the autocast dtype, as an
    # nn.Linear returns them there.
    dy32 = dy.float()
    xa = x32.clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=dtype):
        ya, aux = layer(xa)
        lin = torch.nn.Linear(H, H)(xa)
    (ya.float().mul(dy32).sum() + aux).backward()
    y_ref, _, dx_ref, _ = run(layer, x32, dy32)
    check("autocast(%s): y has the dtype an nn.Linear gives (%s)"
          % (name, str(lin.dtype).replace("torch.", "")),
          ya.dtype == lin.dtype == dtype)
    check("autocast(%s): y is the float32 layer's rounded" % name,
          same(ya.detach(), y_ref.to(dtype)))
    # dy reaches the layer as the float32 of the rounded y's gradient.
    check("autocast(%s): aux loss float32, dx float32, the float32 layer's"
          % name, aux.dtype == torch.float32 and
          same(xa.grad, dx_ref))

# bfloat16 parameters (the model cast with .to(torch.bfloat16)).
half = copy.deepcopy(layer).to(torch.bfloat16)
ref = copy.deepcopy(layer)
with torch.no_grad():
    for (n, p), (_, q) in zip(half.named_parameters(), ref.named_parameters()):
        q.copy_(p.float())
xb = x32.to(torch.bfloat16)
dy = torch.randn(2, T // 2, H).to(torch.bfloat16)
y, aux, dx, grads = run(half, xb, dy)
y_ref, aux_ref, dx_ref, grads_ref = run(ref, xb.float(), dy.float())
check("bfloat16 parameters: y is the float32 layer's rounded",
      same(y, y_ref.to(torch.bfloat16)))
check("bfloat16 parameters: dx is the float32 layer's rounded",
      same(dx, dx_ref.to(torch.bfloat16)))
check("bfloat16 parameters: each gradient is bfloat16, the float32 layer's "
      "rounded", all(same(grads[n], grads_ref[n].to(torch.bfloat16))
                     for n in grads))

# A bfloat16 layer trains with muir.torch.Muon.
net = copy.deepcopy(layer).to(torch.bfloat16)
opt = mt.Muon(net.named_parameters(), lr=0.02, cache_dir=None)
target = torch.randn(T, H).to(torch.bfloat16)
xs = torch.randn(T, H).to(torch.bfloat16)
losses = []
for step in range(4):
    opt.zero_grad()
    y, aux = net(xs)
    loss = (y.float() - target.float()).pow(2).mean() + aux
    loss.backward()
    opt.step()
    losses.append(loss.item())
check("bfloat16 layer under muir.torch.Muon: parameters stay bfloat16",
      all(p.dtype == torch.bfloat16 for p in net.parameters()))
check("bfloat16 layer under muir.torch.Muon: the loss falls",
      losses[-1] < losses[0])

for bad, what in ((x32.double(), "float64 x"),
                  (x32.to(torch.int32), "int32 x")):
    try:
        layer(bad)
        check("refuses %s" % what, False)
    except mt.MoEInputError as e:
        print("refused %s: %s" % (what, e))
try:
    copy.deepcopy(layer).to(torch.float64)(x32)
    check("refuses float64 parameters", False)
except mt.MoEInputError as e:
    print("refused float64 parameters: %s" % e)
failures.finish()
