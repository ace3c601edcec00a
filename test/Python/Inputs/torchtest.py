"""Shared pieces of the muir.torch tests: a tiny MoE-ish model whose
parameters cover every case (2-D Muon, 3-D expert stacks both tall and
wide, 1-D norms and biases, an embedding and a head forced to AdamW), its
data, a float64 NumPy reference of the two updates written from the
formulas (docs/description.md, dialects/Muir/MuirOps.td), and failure
reporting.
"""
import sys

import muir_reference as ref
import numpy as np
import torch
import torch.nn.functional as F

VOCAB, DIM, EXPERTS, HIDDEN = 32, 16, 4, 24


class Tiny(torch.nn.Module):
    """Embedding -> scaled by a norm weight -> residual tanh projection ->
    dense soft MoE over 3-D expert stacks -> head."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)            # AdamW (name)
        self.norm = torch.nn.Parameter(torch.ones(DIM))       # AdamW (1-D)
        self.proj = torch.nn.Linear(DIM, DIM)                 # Muon + bias
        self.router = torch.nn.Linear(DIM, EXPERTS, bias=False)   # Muon
        self.up = torch.nn.Parameter(                         # Muon, tall
            torch.randn(EXPERTS, HIDDEN, DIM) / DIM ** 0.5)
        self.down = torch.nn.Parameter(                       # Muon, wide
            torch.randn(EXPERTS, DIM, HIDDEN) / HIDDEN ** 0.5)
        self.head = torch.nn.Linear(DIM, VOCAB, bias=False)   # AdamW (name)

    def forward(self, tokens):
        x = self.embed(tokens) * self.norm
        x = x + torch.tanh(self.proj(x))
        gates = torch.softmax(self.router(x), dim=-1)
        h = F.silu(torch.einsum("btd,ehd->bteh", x, self.up))
        y = torch.einsum("bteh,edh->bted", h, self.down)
        x = x + (gates.unsqueeze(-1) * y).sum(dim=2)
        return self.head(x)


def make_model(seed=0):
    torch.manual_seed(seed)
    return Tiny()


def batch(step, batch_size=4, length=8):
    """The tokens and targets of training step `step` (deterministic)."""
    g = torch.Generator().manual_seed(1000 + step)
    tokens = torch.randint(0, VOCAB, (batch_size, length + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def loss_of(model, step):
    x, y = batch(step)
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))


def train_step(model, opt, step, set_to_none=True):
    """Forward, backward, opt.step(), zero_grad; returns the loss."""
    loss = loss_of(model, step)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=set_to_none)
    return float(loss)


# ---------------------------------------------------------------------------
# float64 reference of muir.muon_update and muir.adamw_update
# ---------------------------------------------------------------------------

# The float64 references of the two updates: test/lib/muir_reference.py
# (written from the formulas of docs/description.md and
# dialects/Muir/MuirOps.td), with muir.torch.Muon's defaults.

def ref_muon(w, g, m, lr, wd, beta=0.95, nesterov=True, steps=5,
             scale_extra=0.2):
    """One Muon step (momentum ema) in float64: returns (w', m')."""
    return ref.muon_update(w, g, m, lr, beta=beta, nesterov=nesterov,
                           weight_decay=wd, scale_extra=scale_extra,
                           ns_steps=steps)


def ref_adamw(w, g, m, v, t, lr, wd, beta1=0.9, beta2=0.95, eps=1e-8):
    """One AdamW step (t 1-based) in float64: returns (w', m', v')."""
    return ref.adamw_update(w, g, m, v, t, lr, beta1=beta1, beta2=beta2,
                            eps=eps, weight_decay=wd)


def rel(x, ref):
    """||x - ref|| / ||ref|| in float64 (0 when both are 0)."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = np.linalg.norm(ref.ravel())
    num = np.linalg.norm((x - ref).ravel())
    return float(num / den) if den > 0 else float(num)


# float32 storage rounding of a result, relative: each element of W' is
# rounded once when stored (2^-24), and W (1 - lr wd) is a float32 product
# of a rounded factor (twice more).
ROUND = 3 * 2.0 ** -24


def update_error(w, got, ref, tol):
    """How far `got` (muir's W') is from `ref` (the float64 W'), in units of
    what is allowed: tol of the update ||ref - w|| plus the float32 rounding
    of storing W' (ROUND ||ref||). At most 1 passes."""
    w, got, ref = (np.asarray(x, dtype=np.float64) for x in (w, got, ref))
    allowed = tol * np.linalg.norm((ref - w).ravel()) + \
        ROUND * np.linalg.norm(ref.ravel())
    return float(np.linalg.norm((got - ref).ravel()) / allowed)


# ---------------------------------------------------------------------------
# snapshots and failures
# ---------------------------------------------------------------------------

def snapshot(model, opt):
    """Copies of every parameter and every state tensor/value."""
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    names = {p: n for n, p in model.named_parameters()}
    state = {}
    for p, s in opt.state.items():
        state[names[p]] = {k: (v.detach().clone()
                               if isinstance(v, torch.Tensor) else v)
                           for k, v in s.items()}
    return params, state


def same(a, b):
    """Bitwise equal snapshots: (True, "") or (False, what differs)."""
    pa, sa = a
    pb, sb = b
    for n in pa:
        if not torch.equal(pa[n], pb[n]):
            return False, "parameter %s differs" % n
    if set(sa) != set(sb):
        return False, "state exists for %s, not %s" % (sorted(sa), sorted(sb))
    for n in sa:
        if set(sa[n]) != set(sb[n]):
            return False, "state keys of %s differ" % n
        for k in sa[n]:
            x, y = sa[n][k], sb[n][k]
            eq = torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
            if not eq:
                return False, "state %s of %s differs" % (k, n)
    return True, ""


class Failures:
    """Collects failures; `finish` prints them and exits non-zero. With
    `verbose`, every check prints "<what>: ok" or "<what>: FAIL" (for
    FileCheck); otherwise only failures print."""

    def __init__(self, name, verbose=False):
        self.name = name
        self.verbose = verbose
        self.failed = []

    def check(self, ok, what):
        if self.verbose:
            print("%s: %s" % (what, "ok" if ok else "FAIL"), flush=True)
        if not ok:
            self.failed.append(what)
            if not self.verbose:
                print("FAIL: %s" % what, flush=True)
        return ok

    def finish(self):
        if self.failed:
            print("%s: %d FAILED" % (self.name, len(self.failed)))
            sys.exit(1)
        print("%s: PASS" % self.name)
        sys.exit(0)
