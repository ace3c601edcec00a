"""muir.torch.Muon's MuonClip: the attention blocks whose q and k
projections a step clips, and the max logits each step() is given."""
import numbers
import torch
from muir.torch._common import (
    _in_range,
    _real,
    _value_text)


class _QkClip:
    """Part of muir.torch.Muon (a mixin of its methods)."""

    def _set_attention(self, qk_clip, attention):
        """MuonClip's blocks: [(name, q, k, heads, kv_heads)] with q and k
        parameters of this optimizer (given as tensors or by name), and
        its threshold tau; checked as the description reader does."""
        self._attention, self._qk_clip = [], None
        self._step_logits = {}
        if attention is None and qk_clip is None:
            return
        where = "muir.torch.Muon"
        if attention is None or qk_clip is None:
            raise ValueError("%s: MuonClip needs both qk_clip (tau) and "
                             "attention (the blocks it clips)" % where)
        if isinstance(qk_clip, bool) or not _in_range(_real(qk_clip), "eps"):
            raise ValueError("%s: qk_clip %s; expected a finite value in "
                             "(0, inf)" % (where, _value_text(qk_clip)))
        by_name = {d["name"]: p for p, d in self._info.items()
                   if self._names[d["name"]] == 1}
        taken, names = {}, set()
        for n, block in enumerate(attention):
            if not isinstance(block, dict):
                raise TypeError("%s: attention[%d] is %r; expected a dict "
                                "{name, q, k, heads, kv_heads}"
                                % (where, n, type(block).__name__))
            unknown = sorted(set(block) - {"name", "q", "k", "heads",
                                           "kv_heads"})
            missing = [key for key in ("name", "q", "k", "heads")
                       if key not in block]
            if unknown or missing:
                raise ValueError("%s: attention[%d] %s" % (
                    where, n, "has unknown keys %s" % ", ".join(unknown)
                    if unknown else "needs %s" % ", ".join(missing)))
            name = block["name"]
            if not isinstance(name, str) or not name or "/" in name or \
                    name in names:
                raise ValueError("%s: attention[%d] has name %r; expected "
                                 "a new non-empty name without '/'"
                                 % (where, n, name))
            names.add(name)
            heads = block["heads"]
            kv = block.get("kv_heads", heads)
            for key, v in (("heads", heads), ("kv_heads", kv)):
                if isinstance(v, bool) or \
                        not isinstance(v, numbers.Integral) or v < 1:
                    raise ValueError("%s: attention block '%s': %s %r; "
                                     "expected an integer >= 1"
                                     % (where, name, key, v))
            if heads % kv:
                raise ValueError("%s: attention block '%s': heads (%d) is "
                                 "not a multiple of kv_heads (%d)"
                                 % (where, name, heads, kv))
            pair = []
            for role, rows in (("q", heads), ("k", kv)):
                t = block[role]
                p = by_name.get(t) if isinstance(t, str) else \
                    t if isinstance(t, torch.Tensor) and t in self._info \
                    else None
                if p is None and isinstance(t, str) and self._names[t] > 1:
                    raise ValueError("%s: attention block '%s': %s %r names "
                                     "%d parameters of this optimizer; give "
                                     "the tensor" % (where, name, role, t,
                                                     self._names[t]))
                if p is None:
                    raise ValueError("%s: attention block '%s': %s %s is "
                                     "no parameter of this optimizer"
                                     % (where, name, role,
                                        repr(t) if isinstance(t, str)
                                        else "(a tensor)"))
                d = self._info[p]
                if len(d["shape"]) != 2 or d["shape"][0] % rows:
                    raise ValueError(
                        "%s: attention block '%s': %s '%s' of shape %s; "
                        "expected a matrix whose rows are %d heads"
                        % (where, name, role, d["name"], d["shape"], rows))
                if p in taken:
                    raise ValueError("%s: attention block '%s': parameter "
                                     "'%s' is clipped by block '%s' already"
                                     % (where, name, d["name"], taken[p]))
                taken[p] = name
                pair.append(p)
            self._attention.append((name, pair[0], pair[1], int(heads),
                                    int(kv)))
        self._qk_clip = float(qk_clip)

    def _check_logits(self, max_logits):
        """step()'s max_logits ({block name: tensor [heads]}), checked and
        kept as float32 contiguous tensors for the run (nothing is changed
        on an error); a block whose q and k have no gradient now needs
        none."""
        where = "muir.torch.Muon.step"
        if not self._attention:
            if max_logits is not None:
                raise ValueError("%s: max_logits given, but the optimizer "
                                 "has no attention blocks (attention=[...], "
                                 "qk_clip=tau)" % where)
            return
        if max_logits is None:
            max_logits = {}
        if not isinstance(max_logits, dict):
            raise TypeError("%s: max_logits is %r; expected a dict of "
                            "block name -> tensor [heads]"
                            % (where, type(max_logits).__name__))
        known = {b[0]: b for b in self._attention}
        unknown = sorted(set(max_logits) - set(known), key=str)
        if unknown:
            raise ValueError("%s: max_logits names %s, which is no "
                             "attention block (blocks: %s)"
                             % (where, ", ".join(map(repr, unknown)),
                                ", ".join(sorted(known))))
        kept = {}
        for name, q, k, heads, kv in self._attention:
            t = max_logits.get(name)
            if t is None:
                if q.grad is not None or k.grad is not None:
                    raise ValueError(
                        "%s: max_logits has no entry for attention block "
                        "'%s', whose q and k take part in this step (pass "
                        "max_logits={'%s': the largest pre-softmax logit "
                        "of each of its %d query heads})"
                        % (where, name, name, heads))
                continue
            if not isinstance(t, torch.Tensor) or \
                    tuple(t.shape) != (heads,) or t.is_complex() or \
                    t.dtype is torch.bool:
                raise ValueError("%s: max_logits['%s'] must be a real "
                                 "tensor of shape (%d,) (one value per "
                                 "query head), got %s"
                                 % (where, name, heads,
                                    "%s %s" % (t.dtype, tuple(t.shape))
                                    if isinstance(t, torch.Tensor) else
                                    type(t).__name__))
            t = t.detach().to(torch.float32).contiguous()
            bad = (~torch.isfinite(t)).nonzero()
            if len(bad):
                h = int(bad[0][0])
                raise ValueError("%s: max_logits['%s'] holds %s at head %d"
                                 % (where, name, float(t[h]), h))
            kept[name] = t
        self._step_logits = kept

    def _bind_logits(self, c, device):
        """Binds c's max_logits arguments to step()'s tensors (on the
        step's device), or zeros for a block that takes no part now (its
        q and k are skipped: their clip leaves them as they are)."""
        given = self._step_logits
        for index, name, heads in c.logits:
            t = given.get(name)
            t = torch.zeros(heads, dtype=torch.float32, device=device) \
                if t is None else t.to(device)
            c.step.bind(index, t.data_ptr())
            c.logits_bound[index] = t

    def _clip_blocks(self, params):
        """The description's MuonClip settings for the step of `params`:
        the attention blocks among them (q and k together) and tau."""
        ids = {id(p) for p in params}
        blocks = []
        for name, q, k, heads, kv in self._attention:
            if (id(q) in ids) != (id(k) in ids):
                raise ValueError(
                    "muir.torch.Muon: attention block '%s': q '%s' and k "
                    "'%s' must take part together (one of them has had no "
                    "gradient yet, or they are on different devices)"
                    % (name, self._info[q]["name"], self._info[k]["name"]))
            if id(q) in ids:
                blocks.append({"name": name,
                               "q": self._info[q]["desc_name"],
                               "k": self._info[k]["desc_name"],
                               "heads": heads, "kv_heads": kv})
        if not blocks:
            return {}
        return {"qk_clip": self._qk_clip, "attention": blocks}
