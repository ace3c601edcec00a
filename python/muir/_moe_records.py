"""The expert rows a muir.torch.MoE layer's stacks hold on this rank, and
the record a saved state keeps of them (checked before a stack loads):
what its checkpoints (state_dict, muir.torch's optimizer state, DCP)
share."""
import numbers

import torch


def expert_rows(p):
    """The experts an expert stack (or its optimizer state) holds: (lo, hi,
    experts), rows [lo, hi) of the layer's `experts`; None for a tensor
    that is no muir.torch.MoE expert stack."""
    experts = getattr(p, "_muir_experts", None)
    if experts is None:
        return None
    lo = getattr(p, "_muir_ep_rank", 0) * p.shape[0]
    return (lo, lo + p.shape[0], experts)


def saved_rows(saved):
    """(lo, hi, experts) of a state's record of the experts a stack holds
    ("muir_experts": [lo, hi, experts]), or None when the record is no such
    thing: three integers (not bools, floats or strings) with
    0 <= lo < hi <= experts. A state is data from a file: its record decides
    which rows load where, so it is checked before it is used."""
    if isinstance(saved, (list, tuple)) and len(saved) == 3 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool)
            for v in saved):
        lo, hi, experts = (int(v) for v in saved)
        if 0 <= lo < hi <= experts:
            return lo, hi, experts
    return None


def bad_record(saved, who):
    """The message for a record that saved_rows refuses."""
    return ("%s is recorded as holding experts %r (\"muir_experts\": [lo, "
            "hi, experts]); expected three integers with 0 <= lo < hi <= "
            "experts: the state_dict is damaged or was edited"
            % (who, saved))


def held_rows(t, saved, want, who):
    """(rows, None): the rows of `t` (a saved expert stack or its optimizer
    state, dimension 0 the experts) for the experts want = (lo, hi,
    experts); or (None, why) when it does not hold them. `saved` is what
    the state records it holds ((lo, hi, experts), checked by saved_rows);
    None (a dict made by hand): every expert if it has their rows, else
    this rank's."""
    lo, hi, experts = want
    if saved is not None:
        record = saved_rows(saved)
        if record is None:
            return None, bad_record(saved, who)
        saved = record
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return t, None
    if saved is None:
        if t.shape[0] == experts:
            saved = (0, experts, experts)
        elif t.shape[0] == hi - lo:
            saved = want
        else:
            return None, ("%s holds %d experts' rows; this rank holds "
                          "experts %d-%d of %d (%d rows): load the "
                          "state_dict this rank's experts were saved in, or "
                          "one made by muir.torch.full_state_dict, which "
                          "loads on any ep" % (who, t.shape[0], lo, hi - 1,
                                               experts, hi - lo))
    slo, shi, sexperts = saved
    if sexperts != experts:
        return None, ("%s is saved for a layer of %d experts; this one has "
                      "%d" % (who, sexperts, experts))
    if t.shape[0] != shi - slo:
        return None, ("%s has %d rows, but its state_dict says it holds "
                      "experts %d-%d" % (who, t.shape[0], slo, shi - 1))
    if slo <= lo and hi <= shi:
        if (slo, shi) == (lo, hi):
            return t, None
        return t[lo - slo:hi - slo].clone(), None
    return None, ("%s holds experts %d-%d of %d (one rank's part of an "
                  "expert-parallel state); this rank holds experts %d-%d: "
                  "load the state_dict this rank's experts were saved in, or "
                  "one made by muir.torch.full_state_dict, which loads on "
                  "any ep" % (who, slo, shi - 1, experts, lo, hi - 1))
