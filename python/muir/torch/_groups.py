"""muir.torch.Muon's param groups: which optimizer each parameter takes,
the groups' keys and values checked, and the compiled step's argument
names."""
import difflib
import math
import operator
import torch
import muir
from muir import description as _description
from muir._errors import ParamGroupError
from muir._dtensor import _dtensor_split, _is_dtensor, _shard_dim
from muir.torch._common import (
    SCHEDULER_KEYS,
    _COMPILED_KEYS,
    _STRUCTURAL_KEYS,
    _group_keys,
    _is_bool,
    _kinds,
    _named_items,
    _run_time_keys,
    _tables,
    _value_problem,
    _value_text)


class _Groups:
    """Part of muir.torch.Muon (a mixin of its methods)."""

    def _assign(self, name, p, use_muon):
        """The optimizer `p` takes: use_muon (True, False) decides, else
        the tensor's `_muir_optimizer` mark, else muir.description.assign
        (4-D weights as the matrix [out, in*kh*kw])."""
        shape = tuple(p.shape)
        matrix = shape if len(shape) != 4 else \
            (shape[0], shape[1] * shape[2] * shape[3])
        if use_muon is True:
            if len(shape) not in (2, 3, 4):
                raise ValueError("muir.torch.Muon: parameter '%s' of shape %s "
                                 "is in a group with use_muon=True, but Muon "
                                 "takes matrices (2-D, 3-D stacks, 4-D "
                                 "convolution weights)" % (name, shape))
            return "muon"
        if use_muon is False:
            return "adamw"
        opt = _description.assign(name, matrix, self._adamw_patterns)[0]
        marked = getattr(p, "_muir_optimizer", None)
        if marked in ("muon", "adamw") and \
                (marked == "adamw" or len(shape) in (2, 3, 4)):
            opt = marked
        return opt

    def add_param_group(self, param_group):
        """Adds a group (a dict with "params" and any of the group keys; a
        "use_muon" of True or False puts all its parameters on Muon or
        AdamW, else each is assigned by shape and name). Its parameters
        take part from the next step() on."""
        if not isinstance(param_group, dict):
            raise TypeError("muir.torch.Muon: a param group is a dict, got %r"
                            % type(param_group).__name__)
        group = dict(param_group)
        index = len(self.param_groups)
        if "params" not in group:
            raise ValueError("muir.torch.Muon: param group %d has no "
                             "'params'" % index)
        use_muon = group.get("use_muon")
        if use_muon is not None and not _is_bool(use_muon):
            raise ParamGroupError(index, "group", "use_muon",
                                  "has use_muon %r; expected True, False or "
                                  "None" % (use_muon,))
        use_muon = None if use_muon is None else bool(use_muon)
        group["use_muon"] = use_muon
        items = _named_items(group["params"], "param group %d" % index)
        kinds = _kinds(use_muon)
        kind = kinds[0] if len(kinds) == 1 else "mixed"
        # Keys it does not give: the constructor's (AdamW's for use_muon
        # False, Muon's lr and weight_decay for a mixed group).
        for k in reversed(kinds):
            for key, v in self._group_defaults[k].items():
                group.setdefault(key, v)
        run, comp = _group_keys(use_muon, self._compiled_keys)
        for key in run + comp:
            self._check_value(index, kind, key, group[key])
        # The tensors: named, assigned, checked, before anything is kept.
        # Names need not be unique (two modules' named_parameters() both
        # hold "weight", as torch.optim allows): where a name is a key (the
        # compiled step's arguments) _name_arguments keeps keys unique.
        added = []
        for n, (name, p) in enumerate(items):
            if name is None:
                name = "param%d" % (len(self._info) + len(added))
            if not name:
                raise ValueError("a parameter has an empty name")
            if p in self._info or any(p is q for _, q, _ in added):
                other = self._info[p]["name"] if p in self._info else \
                    next(m for m, q, _ in added if q is p)
                raise ValueError("parameter '%s' is the same tensor as '%s'"
                                 % (name, other))
            opt = self._assign(name, p, use_muon)
            # An expert stack of a muir.torch.MoE with ep > 1: this rank's
            # experts, split over ep in the step (never shared out).
            ep = int(getattr(p, "_muir_ep", 1) or 1)
            if ep > 1 and (opt != "muon" or p.dim() != 3):
                raise ValueError("parameter '%s' is an expert-parallel stack "
                                 "(ep=%d) and takes Muon per expert; it "
                                 "cannot take AdamW" % (name, ep))
            if ep > 1 and self._ep not in (1, ep):
                raise ValueError("expert-parallel stacks of different ep "
                                 "(%d, %d); the ranks of a process run one "
                                 "grid" % (self._ep, ep))
            added.append((name, p, (opt, ep)))
        group["params"] = [p for _, p, _ in added]
        super().add_param_group(group)
        for name, p, (opt, ep) in added:
            shape = tuple(p.shape)
            # A DTensor (FSDP2): the step binds this rank's part.
            split, local = _dtensor_split(name, p, opt) \
                if _is_dtensor(p) else (None, shape)
            desc = local if len(local) != 4 or opt != "muon" else \
                (local[0], local[1] * local[2] * local[3])
            # The dtype the step computes in: float64 for a float64
            # parameter, float32 for the others (bfloat16 through a copy).
            wide = p.dtype is torch.float64
            tables = _tables()
            keys = tables["state"][
                "adamw" if opt != "muon" else self._matrix_optimizer]
            # Each state tensor's shape: the parameter's, or one value per
            # row of the step's matrix (NorMuon's variance).
            sizes = {k: torch.Size(desc[:-1] if k in tables["rows"]
                                   else local)
                     for k in keys}
            # The whole state tensors' shapes (a DTensor's state: its
            # global shape).
            whole = {k: torch.Size(shape[:1] if len(shape) == 4 else
                                   shape[:-1]) if k in tables["rows"]
                     else torch.Size(shape) for k in keys}
            self._info[p] = {"name": name, "shape": shape, "desc_shape": desc,
                             "size": torch.Size(local), "numel": p.numel(),
                             # A DTensor with no part on this rank (FSDP2's
                             # last ranks of a short tensor): not in the
                             # step, its (empty) state kept as the others'.
                             "empty": _is_dtensor(p) and not math.prod(local),
                             "dtensor": _is_dtensor(p), "split": split,
                             # Its ranks hold different parts.
                             "sharded": _is_dtensor(p) and
                             _shard_dim(p) is not None,
                             "whole_sizes": whole,
                             "dtype": torch.float64 if wide else torch.float32,
                             "optimizer": opt,
                             "state_keys": keys, "state_sizes": sizes,
                             "index": self._preset_index.pop(
                                 p, len(self._info)),
                             "ep": ep, "group": index, "seen": None}
            d = self._info[p]
            if d["empty"]:
                self._empty.append(p)
            self._any_sharded |= d["sharded"]
            self._records[d["index"]] = (p, d)
            self._names[name] += 1
            if ep > 1:
                self._ep = ep
        self._group_params.append(list(group["params"]))
        self._group_records.append([self._info[p] for p in group["params"]])
        self._group_use_muon.append(use_muon)
        self._group_checked.append(None)
        self._group_initial.append({k: group[k] for k in run})
        self._name_arguments()

    def _name_arguments(self):
        """Names as the step's arguments, which must be unique: the
        parameters' own, unless two parameters share a name or one could
        be taken for another's gradient or state (or the counter); then
        every parameter's place, "p<index>"."""
        names = self._names

        def clash(n):
            return n == "step" or any(
                n.endswith(s) and n[:-len(s)] in names
                for s in _tables()["suffixes"])
        self._use_index = any(count > 1 for count in names.values()) or \
            any(clash(n) for n in names)
        for d in self._info.values():
            d["desc_name"] = "p%d" % d["index"] if self._use_index \
                else d["name"]

    @staticmethod
    def _check_value(index, kind, key, value, keyword=None):
        """Raises ParamGroupError if `value` is not a valid value of `key`
        (the description reader's ranges); `keyword`: the constructor's
        keyword it came from."""
        why = _value_problem(key, value)
        if why is not None:
            raise ParamGroupError(index, kind, key, "has %s %s%s; %s" % (
                key, _value_text(value),
                " (keyword %s)" % keyword if keyword and keyword != key
                else "", why))

    def _check_groups(self):
        """param_groups as the step reads them: the groups as added (their
        use_muon and tensors), no key the step does not read (other than
        the lr schedulers'), none missing, every value in range. Raises
        ParamGroupError naming the group and the key."""
        groups = self.param_groups
        if len(groups) != len(self._group_params):
            raise ParamGroupError(
                None, None, None,
                "has %d groups, but muir.torch.Muon was given %d; add groups "
                "with add_param_group" % (len(groups),
                                          len(self._group_params)))
        for index, (group, use_muon, want) in enumerate(
                zip(groups, self._group_use_muon, self._group_params)):
            kinds = _kinds(use_muon)
            kind = kinds[0] if len(kinds) == 1 else "mixed"
            got = group.get("use_muon", muir.DEFAULT)
            same = got is use_muon or (use_muon is not None and
                                       _is_bool(got) and
                                       bool(got) == use_muon)
            if not same:
                got = "no use_muon" if got is muir.DEFAULT else \
                    "use_muon %r" % (got,)
                raise ParamGroupError(
                    index, kind, "use_muon",
                    "has %s, but the group was added with use_muon %r; "
                    "which optimizer a parameter takes is fixed when its "
                    "group is added" % (got, use_muon))
            params = group.get("params")
            if not isinstance(params, list) or len(params) != len(want) or \
                    not all(map(operator.is_, params, want)):
                raise ParamGroupError(
                    index, kind, "params",
                    "has other 'params' than the %d tensors it was added "
                    "with; a group's parameters are fixed when it is added "
                    "(add_param_group adds more)" % len(want))
            # The keys and values checked last time, unchanged: valid.
            checked = self._group_checked[index]
            if checked is not None and group.keys() == checked[0] and \
                    tuple(map(group.get, checked[1])) == checked[2]:
                continue
            run, comp = _group_keys(use_muon, self._compiled_keys)
            read = run + comp
            known = read + _STRUCTURAL_KEYS
            # A scheduler's momentum cycling writes "momentum" to AdamW's
            # groups too (not read there).
            tolerated = SCHEDULER_KEYS if "muon" in kinds else \
                SCHEDULER_KEYS | {"momentum"}
            unread = sorted(str(k) for k in group
                            if k not in known and k not in tolerated)
            missing = [k for k in read if k not in group]
            if unread or missing:
                key = (unread or missing)[0]
                if unread:
                    what = "has %s, %s the step does not read" % (
                        ", ".join("'%s'" % k for k in unread),
                        "a key" if len(unread) == 1 else "keys")
                    other = [o for o in ("muon", "adamw") if o not in kinds
                             and key in _run_time_keys(o) + _COMPILED_KEYS[o]]
                    hint = difflib.get_close_matches(
                        key, read + tuple(sorted(SCHEDULER_KEYS)), 1)
                    if other:
                        what += " (a setting of %s)" % (
                            "Muon" if other[0] == "muon" else "AdamW")
                    elif hint:
                        what += " (did you mean '%s'?)" % hint[0]
                else:
                    what = "has no '%s'" % key
                raise ParamGroupError(
                    index, kind, key,
                    "%s; the step reads %s at every step()%s; "
                    "torch's lr schedulers may add %s" % (
                        what, ", ".join(run),
                        " and %s when it compiles (a new value compiles a "
                        "new step)" % ", ".join(comp) if comp else "",
                        ", ".join(sorted(SCHEDULER_KEYS))))
            for key in read:
                self._check_value(index, kind, key, group[key])
            # (betas as a tuple: a list compares equal to it.)
            self._group_checked[index] = (
                set(group), read, tuple(
                    tuple(group[k]) if k == "betas" else group[k]
                    for k in read))

    def _structure(self, index):
        """A group's compiled settings now in param_groups."""
        group = self.param_groups[index]
        return tuple((k, group[k]) for k in
                     _group_keys(self._group_use_muon[index],
                                 self._compiled_keys)[1])
