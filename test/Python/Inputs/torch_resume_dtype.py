"""muir.torch.Muon (and NorMuon) over bfloat16 parameters resumes bitwise:
6 steps in one run against 3 steps, the optimizer's state_dict through
torch.save / torch.load into a fresh optimizer over a fresh model (the
parameters loaded from the model's state_dict), and 3 more steps. The
optimizer state of a bfloat16 parameter is float32 (Muon's momentum,
AdamW's moments, NorMuon's variance) and must stay float32 through
load_state_dict: torch.optim's own load_state_dict casts it to the
parameter's dtype, rounding it to bfloat16. A float32 parameter beside
them, a state loaded twice into one optimizer and a float64 state (loaded
to float32 once, as the step keeps it) are checked too.
"""
import copy
import io

import torch

import muir.torch as mt

STEPS, SAVE_AT = 6, 3


class Net(torch.nn.Module):
    """Two bfloat16 matrices (Muon), a bfloat16 bias and embedding-like
    table (AdamW, by name) and a float32 matrix (Muon)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        bf16 = torch.bfloat16
        P = torch.nn.Parameter
        self.w1 = P((torch.randn(24, 16, generator=g) / 4).to(bf16))
        self.w2 = P((torch.randn(16, 24, generator=g) / 5).to(bf16))
        self.bias = P(torch.randn(16, generator=g).to(bf16))
        self.embed = P((torch.randn(10, 16, generator=g)).to(bf16))
        self.w3 = P(torch.randn(16, 16, generator=g) / 4)


def grads(net, step):
    """Gradients of step `step`: a fixed draw plus a term of the present
    parameters (so that a parameter off by one ulp gives other gradients
    next)."""
    g = torch.Generator().manual_seed(100 + step)
    for p in net.parameters():
        noise = torch.randn(p.shape, generator=g)
        p.grad = (noise + 0.5 * p.detach().float()).to(p.dtype)


def build(kind, net):
    make = mt.Muon if kind == "muon" else mt.NorMuon
    return make(net.named_parameters(), lr=0.02, weight_decay=0.1,
                cache_dir=None)


def run(opt, net, steps):
    for k in steps:
        grads(net, k)
        opt.step()


def state_of(net, opt):
    names = {p: n for n, p in net.named_parameters()}
    return {(names[p], k): v for p, st in opt.state.items()
            for k, v in st.items()}


def compare(what, a_net, a_opt, b_net, b_opt):
    pa, pb = dict(a_net.named_parameters()), dict(b_net.named_parameters())
    diff = [n for n in pa if not torch.equal(pa[n], pb[n])]
    sa, sb = state_of(a_net, a_opt), state_of(b_net, b_opt)
    diff += ["state %s %s" % k for k in sa if k not in sb or (
        torch.equal(sa[k], sb[k]) if isinstance(sa[k], torch.Tensor)
        else sa[k] == sb[k]) is False]
    if isinstance(sa, dict) and set(sa) != set(sb):
        diff.append("state keys")
    print("%s: %d parameters and %d state values bitwise equal: %s%s"
          % (what, len(pa), len(sa), not diff,
             "" if not diff else " (differ: %s)" % ", ".join(diff)))


for kind in ("muon", "normuon"):
    # The continuous run.
    net = Net()
    opt = build(kind, net)
    run(opt, net, range(STEPS))

    # Steps 0-2, saved (torch.save of both state_dicts).
    first = Net()
    first_opt = build(kind, first)
    run(first_opt, first, range(SAVE_AT))
    buf = io.BytesIO()
    torch.save({"model": first.state_dict(),
                "optimizer": first_opt.state_dict()}, buf)
    saved = first_opt.state_dict()["state"]
    print("%s saved state dtypes: %s" % (kind, " ".join(sorted(
        {"%s=%s" % (k, str(v.dtype).replace("torch.", ""))
         for st in saved.values() for k, v in st.items()
         if isinstance(v, torch.Tensor)}))))

    # A fresh model and optimizer, loaded, then steps 3-5.
    buf.seek(0)
    ckpt = torch.load(buf)
    resumed = Net()
    resumed.load_state_dict(ckpt["model"])
    resumed_opt = build(kind, resumed)
    resumed_opt.load_state_dict(ckpt["optimizer"])
    bf16 = [p for p in resumed.parameters() if p.dtype is torch.bfloat16]
    print("%s after load, the bfloat16 parameters' state dtypes: %s" % (
        kind, " ".join(sorted({"%s=%s" % (k, str(v.dtype).replace(
            "torch.", "")) for p in bf16
            for k, v in resumed_opt.state[p].items()
            if isinstance(v, torch.Tensor)}))))
    loaded = state_of(resumed, resumed_opt)
    print("%s loaded state equals the saved state bitwise: %s" % (
        kind, all(torch.equal(loaded[k], v) if isinstance(v, torch.Tensor)
                  else loaded[k] == v
                  for k, v in state_of(first, first_opt).items())))
    run(resumed_opt, resumed, range(SAVE_AT, STEPS))
    compare("%s resumed == continuous" % kind, net, opt, resumed,
            resumed_opt)

    # The same state loaded into an optimizer (and model) that has
    # stepped, then a float64 copy of it (converted once, to the float32
    # the step keeps).
    again = Net()
    again.load_state_dict(ckpt["model"])
    again_opt = build(kind, again)
    run(again_opt, again, range(2))
    again_opt.load_state_dict(ckpt["optimizer"])
    wide = copy.deepcopy(ckpt["optimizer"])
    for st in wide["state"].values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                st[k] = v.double()
    again_opt.load_state_dict(wide)
    again.load_state_dict(ckpt["model"])
    run(again_opt, again, range(SAVE_AT, STEPS))
    compare("%s reloaded (float64 state) == continuous" % kind, net, opt,
            again, again_opt)
