"""muir.torch.Muon's checkpoints: state_dict and load_state_dict (any
layout, whole or sharded state), and pickling without the compiled
steps."""
import collections
import torch
from muir import _moe_records
from muir._dtensor import _as_placed, _is_dtensor, _rows_of, _state_placements
from muir.torch._common import _tables


class _StateDict:
    """Part of muir.torch.Muon (a mixin of its methods)."""

    def load_state_dict(self, state_dict):
        """torch.optim's load_state_dict, after checking that the state
        was made for these groups: as many groups, as many parameters in
        each, the same use_muon, and state tensors of each parameter's
        shape. A mismatch raises ValueError naming the group or the
        parameter; nothing is loaded. The state tensors keep their
        precision: they are converted once to the dtype the step keeps
        them in (float32, float64 for a float64 parameter), not to the
        parameter's dtype as torch.optim does (a bfloat16 parameter's
        float32 momentum stays float32, and the resumed run equals the
        continuous one bitwise)."""
        groups = state_dict.get("param_groups") \
            if isinstance(state_dict, dict) else None
        if not isinstance(groups, list) or \
                not isinstance(state_dict.get("state"), dict):
            raise ValueError("muir.torch.Muon.load_state_dict: expected a "
                             "state_dict() (a dict with 'state' and "
                             "'param_groups')")
        if len(groups) != len(self.param_groups):
            raise ValueError(
                "muir.torch.Muon.load_state_dict: the state has %d param "
                "groups, this optimizer %d" % (len(groups),
                                               len(self.param_groups)))
        ids = {}
        state_dict = dict(state_dict)
        experts = state_dict.pop("muir_experts", None)
        if experts is None:
            experts = {}
        elif not isinstance(experts, dict):
            raise ValueError("muir.torch.Muon.load_state_dict: the state's "
                             "\"muir_experts\" is %s; expected a dict of "
                             "parameter index -> [lo, hi, experts] (the "
                             "state_dict is damaged or was edited)"
                             % type(experts).__name__)
        state_dict["state"] = dict(state_dict["state"])
        for index, (saved, mine) in enumerate(zip(groups,
                                                  self.param_groups)):
            if len(saved.get("params", ())) != len(mine["params"]):
                raise ValueError(
                    "muir.torch.Muon.load_state_dict: param group %d holds "
                    "%d parameters in the state, %d here"
                    % (index, len(saved.get("params", ())),
                       len(mine["params"])))
            if saved.get("use_muon", mine["use_muon"]) != mine["use_muon"]:
                raise ValueError(
                    "muir.torch.Muon.load_state_dict: param group %d has "
                    "use_muon %r in the state, %r here"
                    % (index, saved.get("use_muon"), mine["use_muon"]))
            for i, p in zip(saved["params"], mine["params"]):
                ids[i] = p
        for i, record in experts.items():
            if _moe_records.saved_rows(record) is None:
                raise ValueError("muir.torch.Muon.load_state_dict: " +
                                 _moe_records.bad_record(record, "the state of %s" % (
                                     "parameter '%s'" % self._info[ids[i]]
                                     ["name"] if i in ids else
                                     "parameter %r" % (i,))))
        for i, entry in state_dict["state"].items():
            p = ids.get(i)
            if p is None:
                raise ValueError("muir.torch.Muon.load_state_dict: the state "
                                 "holds parameter %r, which no group lists"
                                 % (i,))
            d = self._info[p]
            want = _moe_records.expert_rows(p)
            if want is not None:
                # An expert stack's state: this rank's experts' rows of a
                # state that holds them.
                entry = dict(entry)
                for key in d["state_keys"]:
                    rows, why = _moe_records.held_rows(
                        entry.get(key), experts.get(i), want,
                        "parameter '%s''s state '%s'" % (d["name"], key))
                    if why is not None:
                        raise ValueError("muir.torch.Muon.load_state_dict: "
                                         + why)
                    entry[key] = rows
                state_dict["state"][i] = entry
            for key in d["state_keys"]:
                t = entry.get(key)
                if not isinstance(t, torch.Tensor):
                    raise ValueError(
                        "muir.torch.Muon.load_state_dict: parameter '%s' "
                        "(%s) has no '%s' in the state (it holds %s)"
                        % (d["name"], "Muon" if d["optimizer"] == "muon"
                           else "AdamW", key, ", ".join(sorted(entry))))
                # A DTensor parameter's state: whole (a DTensor, or a plain
                # tensor of which this rank keeps its part).
                if t.shape != (d["whole_sizes"] if d["dtensor"] else
                               d["state_sizes"])[key]:
                    raise ValueError(
                        "muir.torch.Muon.load_state_dict: parameter '%s' "
                        "has state '%s' of shape %s, but the parameter is "
                        "%s%s" % (d["name"], key, tuple(t.shape), d["shape"],
                                  "" if key not in _tables()["rows"] else
                                  " (its %s: one value per row, %s)"
                                  % (key, tuple(d["state_sizes"][key]))))
        # torch's load_state_dict casts every floating state tensor to its
        # parameter's dtype: a bfloat16 parameter's float32 state would be
        # rounded to bfloat16, and the resumed run leave the continuous
        # one. The state tensors are set here instead, converted once to
        # the dtype the step keeps them in (float32; float64 for a float64
        # parameter), which is the saved dtype of any state this optimizer
        # made; torch loads the rest (AdamW's step counts, the groups).
        tensors = []
        for i, entry in state_dict["state"].items():
            p = ids[i]
            keys = [k for k in self._info[p]["state_keys"] if k in entry]
            if keys:
                entry = dict(entry)
                tensors += [(p, k, entry.pop(k)) for k in keys]
                state_dict["state"][i] = entry
        super().load_state_dict(state_dict)
        for p, key, t in tensors:
            d = self._info[p]
            if d["dtensor"]:
                # This rank's part, placed as the parameter.
                if _is_dtensor(t) and t.device_mesh == p.device_mesh and \
                        list(t.placements) == _state_placements(p, t):
                    t = t._local_tensor
                else:
                    t = _rows_of(p, t)
                local = t.to(device=p.device, dtype=d["dtype"],
                             copy=True).contiguous()
                self.state[p][key] = _as_placed(p, local,
                                                d["whole_sizes"][key])
                continue
            if _is_dtensor(t):
                t = t.full_tensor()
            self.state[p][key] = t.to(device=p.device, dtype=d["dtype"],
                                      copy=True).contiguous()
        # torch puts the groups' values back, params aside.
        for group, use_muon in zip(self.param_groups, self._group_use_muon):
            group["use_muon"] = use_muon

    def state_dict(self):
        """torch.optim's state_dict, and for each expert stack's state the
        experts it holds ("muir_experts": index -> [lo, hi, experts]), so
        that load_state_dict takes a rank's rows of it and refuses another
        rank's part (muir.torch.full_state_dict gathers them whole)."""
        sd = super().state_dict()
        experts = {}
        for i, p in enumerate(p for g in self.param_groups
                              for p in g["params"]):
            rows = _moe_records.expert_rows(p)
            if rows is not None and i in sd["state"]:
                experts[i] = list(rows)
        if experts:
            sd["muir_experts"] = experts
        return sd

    def __getstate__(self):
        # Compiled steps are handles into muir's library: a copy compiles
        # its own.
        state = dict(self.__dict__)
        state["_cache"] = collections.OrderedDict()
        state["_last_compiled"] = None
        state["_nccl"] = None
        # A process group is the process's: a copy runs over the group
        # this process joined.
        state["_group"] = (None, None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._infer_group()
