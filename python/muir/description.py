"""Step descriptions (docs/description.md) from parameter names and shapes.

    from muir.description import describe, assign
    text = describe([("embed.weight", (1024, 256)), ("l0.q.weight", (256, 256)),
                     ("l0.experts.up", (8, 512, 256)), ("norm.weight", (256,))],
                    lr=0.02, adamw_lr=0.02, devices=1)

The text is JSON (which muir's description reader accepts, so name the
source `.json`): every name is quoted by `json.dumps`, whatever it holds.

Which optimizer a parameter gets is decided here, in Python, and written
into the description through the parameter's role, so the two cannot
disagree (`assign`):
  * a name matching one of `adamw_patterns` (Python fnmatch globs on the
    whole name, case-sensitive: `*` also matches dots) takes AdamW;
  * else a 2-D parameter takes Muon (role `other`), a 3-D one Muon per
    matrix over dim 0 (role `expert`, a stack [E, out, in]);
  * everything else takes AdamW: 1-D and 0-D (role `norm`, a 0-D one
    described as shape [1]), rank >= 4 (role `other`).
A forced-AdamW 2-D parameter gets role `embedding` and a 3-D one `other`,
which take AdamW by default; no override patterns are written, so muir's
glob dialect never has to agree with Python's.

No PyTorch or NumPy here.
"""
import fnmatch
import json

__all__ = ["DEFAULT_ADAMW_PATTERNS", "assign", "describe", "description"]

# Parameters that take AdamW whatever their shape, as Moonlight, Kimi K2 and
# Keller Jordan's Muon do: token embeddings and the output head (the LM
# head's rows are per-token, not a linear map Muon's geometry is for).
DEFAULT_ADAMW_PATTERNS = (
    "*embed*",                       # embed_tokens, tok_embeddings, embedding
    "*wte*", "*wpe*",                # GPT-2's token and position embeddings
    "lm_head", "lm_head.*", "*.lm_head", "*.lm_head.*",
    "head", "head.*", "*.head", "*.head.*",
    "output", "output.*",            # Llama's (Meta) top-level output head
)


def _matches(name, patterns):
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _role(shape, optimizer):
    rank = len(shape)
    if optimizer == "muon":
        return "other" if rank == 2 else "expert"
    if rank == 2:
        return "embedding"
    return "norm" if rank <= 1 else "other"


def assign(name, shape, adamw_patterns=DEFAULT_ADAMW_PATTERNS):
    """("muon" | "adamw", role) for a parameter."""
    if len(shape) in (2, 3) and not _matches(name, adamw_patterns):
        optimizer = "muon"
    else:
        optimizer = "adamw"
    return optimizer, _role(shape, optimizer)


def description(params, name="step", devices=1, lr=0.02, momentum=0.95,
                nesterov=True, weight_decay=0.0, ns_steps=5,
                schedule="simple", scale_mode="spectral", scale_extra=0.2,
                ns_eps=1e-7, momentum_kind="ema", coefficients=None,
                adamw_lr=None, adamw_betas=(0.9, 0.95), adamw_eps=1e-8,
                adamw_weight_decay=0.0,
                adamw_patterns=DEFAULT_ADAMW_PATTERNS, ep=1, overrides=None,
                mask=False, normuon=None, qk_clip=None, attention=None,
                grid_axis="dp"):
    """The description as a dict. `params`: (name, shape) pairs, or
    (name, shape, "muon"|"adamw") to state the optimizer yourself, or
    (name, shape, optimizer, True) for a 3-D expert stack split over `ep`
    ranks (shape: this rank's part; muir.torch.MoE's expert stacks), or
    (name, shape, optimizer, {"kind": K, "axis": A}) for a tensor split
    as shard K (fsdp, tp_column, tp_row) over the `devices` ranks of grid
    axis A (`grid_axis`; shape: this rank's part; FSDP2's and DTensor
    tensor parallel's parameters), and
    a fifth item "f64" for a parameter computed in float64 (its dtype).
    `devices` ranks share Newton-Schulz out over a `dp` axis (grid_axis
    "tp": a tensor-parallel axis, over which split matrices take the
    Newton-Schulz mode the cost model picks and whole ones run on every
    rank); with ep > 1
    the experts take the MoE folding edp x ep of the same ranks. adamw_lr
    None means `lr`. `overrides`: optimizer.overrides entries (dicts), e.g.
    {"names": [...], "lr": 0.01, "momentum": 0.9} for a group of
    parameters named exactly (muir.torch's param_groups). `mask`: the
    step takes per parameter a run-time flag "<name>.take" (0 leaves the
    parameter and its state as they are) and per AdamW parameter its own
    step count "<name>.step" (optimizer.mask). `normuon`: a dict with
    beta2 and eps2 makes the matrices take NorMuon (optimizer.normuon,
    the Muon settings above but scale_mode) instead of Muon. `qk_clip`
    (tau) with `attention` (dicts {name, q, k, heads, kv_heads}, q and k
    parameter names) clips the blocks' query and key projections after
    their update (MuonClip: optimizer.muon.qk_clip); the step then takes
    "<name>.max_logits" per block."""
    entries = []
    ep = int(ep)
    for item in params:
        pname, shape = item[0], tuple(int(d) for d in item[1])
        if len(item) > 2 and item[2] is not None:
            if item[2] not in ("muon", "adamw"):
                raise ValueError("unknown optimizer %r for %r"
                                 % (item[2], pname))
            if item[2] == "muon" and len(shape) not in (2, 3):
                raise ValueError("parameter %r of shape %s cannot take Muon "
                                 "(2-D or 3-D only)" % (pname, shape))
            role = _role(shape, item[2])
        else:
            role = assign(pname, shape, adamw_patterns)[1]
        if not pname:
            raise ValueError("a parameter needs a non-empty name")
        if any(d < 1 for d in shape):
            raise ValueError("parameter %r has an empty shape %s"
                             % (pname, shape))
        entry = {"name": pname, "shape": list(shape) or [1], "role": role}
        if len(item) > 3 and isinstance(item[3], dict):
            # A shard over the grid's `devices` ranks (FSDP2's and DTensor
            # tensor parallel's): shape is this rank's part.
            kind = item[3]["kind"]
            dim = {"fsdp": 0, "expert": 0, "tp_row": len(shape) - 1,
                   "tp_column": 1 if len(shape) == 3 else 0}[kind]
            whole = list(shape)
            whole[dim] *= int(devices)
            entry.update(shape=whole, shard={"kind": kind,
                                             "axis": item[3]["axis"]})
        elif len(item) > 3 and item[3]:
            if len(shape) != 3 or ep < 2:
                raise ValueError("parameter %r: only 3-D expert stacks split "
                                 "over ep > 1" % (pname,))
            entry.update(shape=[shape[0] * ep] + list(shape[1:]),
                         role="expert",
                         shard={"kind": "expert", "axis": "ep"})
        if len(item) > 4 and item[4] not in (None, "f32"):
            if item[4] not in ("f64", "bf16", "f16"):
                raise ValueError("parameter %r: unknown dtype %r"
                                 % (pname, item[4]))
            entry["dtype"] = item[4]
        entries.append(entry)
    muon = {"lr": float(lr), "momentum": float(momentum),
            "nesterov": bool(nesterov), "momentum_kind": momentum_kind,
            "weight_decay": float(weight_decay), "scale_mode": scale_mode,
            "scale_extra": float(scale_extra), "ns_steps": int(ns_steps),
            "schedule": schedule, "eps": float(ns_eps)}
    if coefficients:
        muon["coefficients"] = [float(c) for c in coefficients]
    if qk_clip is not None:
        muon["qk_clip"] = float(qk_clip)
    b1, b2 = adamw_betas
    adamw = {"lr": float(lr if adamw_lr is None else adamw_lr),
             "beta1": float(b1), "beta2": float(b2), "eps": float(adamw_eps),
             "weight_decay": float(adamw_weight_decay)}
    if grid_axis not in ("dp", "tp"):
        raise ValueError("grid_axis %r: expected 'dp' or 'tp'" % (grid_axis,))
    grid = {"axes": {grid_axis: int(devices)}, "devices": int(devices)}
    if ep > 1:
        if int(devices) % ep:
            raise ValueError("ep=%d does not divide the %d ranks"
                             % (ep, int(devices)))
        grid["moe_axes"] = {"edp": int(devices) // ep, "ep": ep}
    optimizer = {"muon": muon, "adamw": adamw}
    if normuon:
        # (QK-clip's tau is optimizer.muon's alone: it clips whatever
        # optimizer updates q and k.)
        nm = {k: v for k, v in muon.items()
              if k not in ("scale_mode", "qk_clip")}
        nm["beta2"] = float(normuon["beta2"])
        nm["eps2"] = float(normuon["eps2"])
        optimizer["normuon"] = nm
    if overrides:
        optimizer["overrides"] = [dict(o) for o in overrides]
    if mask:
        optimizer["mask"] = True
    d = {"name": name,
         "grid": grid,
         "optimizer": optimizer,
         "parameters": entries}
    if attention:
        d["attention"] = [
            {"name": str(a["name"]), "q": str(a["q"]), "k": str(a["k"]),
             "heads": int(a["heads"]),
             "kv_heads": int(a.get("kv_heads") or a["heads"])}
            for a in attention]
    return d


def describe(params, **settings):
    """The description as JSON text (see `description`)."""
    d = description(params, **settings)
    # One setting group and one parameter a line: error messages quote
    # short lines (file:line:col).
    lines = ['{"name": %s,' % json.dumps(d["name"]),
             ' "grid": %s,' % json.dumps(d["grid"]),
             ' "optimizer": {',
             '  "muon": %s,' % json.dumps(d["optimizer"]["muon"])]
    if "normuon" in d["optimizer"]:
        lines.append('  "normuon": %s,'
                     % json.dumps(d["optimizer"]["normuon"]))
    lines.append('  "adamw": %s,' % json.dumps(d["optimizer"]["adamw"]))
    if "mask" in d["optimizer"]:
        lines.append('  "mask": true,')
    if "overrides" in d["optimizer"]:
        lines.append('  "overrides": [')
        lines += ["   %s," % json.dumps(o)
                  for o in d["optimizer"]["overrides"]]
        lines[-1] = lines[-1].rstrip(",")
        lines.append('  ],')
    lines[-1] = lines[-1].rstrip(",") + "},"     # the end of "optimizer"
    if "attention" in d:
        lines.append(' "attention": [')
        lines += ["  %s," % json.dumps(a) for a in d["attention"]]
        lines[-1] = lines[-1].rstrip(",")
        lines.append(' ],')
    lines.append(' "parameters": [')
    lines += ["  %s," % json.dumps(p) for p in d["parameters"]]
    lines[-1] = lines[-1].rstrip(",")
    lines.append(" ]}")
    return "\n".join(lines) + "\n"
