"""muir.torch.Muon's compiled steps: one per structure of its groups
(compiled or loaded from the cache, the least recently used evicted
beyond max_compiled_steps), and the description each is compiled from."""
import numbers
import torch
import muir
from muir import description as _description
from muir._errors import ParameterError
from muir.torch._common import (
    _Compiled,
    _HYPER_FIELDS,
    _parse_layout,
    _tables,
    _world_size)


class _CompiledSteps:
    """Part of muir.torch.Muon (a mixin of its methods)."""

    @property
    def max_compiled_steps(self):
        """How many compiled steps are kept in memory (the least recently
        used is freed first; DEFAULT_MAX_COMPILED_STEPS by default)."""
        return self._max_compiled

    @max_compiled_steps.setter
    def max_compiled_steps(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or value < 1:
            raise ValueError("muir.torch.Muon: max_compiled_steps %r; "
                             "expected an integer >= 1" % (value,))
        self._max_compiled = int(value)
        self._evict()

    def _compile(self, members, groups, target, device):
        """The compiled step of the parameters of indices `members` (a
        sorted tuple; `groups` the indices of their groups), from the cache
        or compiled now."""
        records = self._records
        structure = tuple(self._structure(g) for g in groups)
        last = self._last_compiled
        # The step of the last call, again (the usual case): no key hashed.
        if last is not None and last[0] is members and \
                last[1] == (target, device.index) and last[2] == structure:
            return last[3]
        key = (members, target, device.index, structure)
        c = self._cache.get(key)
        if c is not None:
            self._cache.move_to_end(key)
            self._last_compiled = (members, key[1:3], structure, c)
            return c
        info = self._info
        params = [records[i][0] for i in members]
        if self._devices is None:
            self._devices = _parse_layout(self._layout, target, self._group)
        if target == "cpu" and self._devices > 1:
            # An explicit layout under torchrun: the group's ranks too.
            _world_size(target, self._group)
        self._check_meshes(params, target)
        text, override_groups = self._describe(params)
        options = dict(self._options)
        options["target"] = target
        if target == "cpu":
            # cuda_bf16 is for the CUDA steps of a mixed set (the CPU step
            # iterates in bf16 with ns_precision="bf16").
            options.pop("cuda-bf16", None)
        if target == "cpu" and self._cache_dir:
            # Where the cache cannot keep the step (no C compiler to link
            # it, a folder it cannot write), the library runs it through
            # its JIT.
            options["cache-dir"] = self._cache_dir
        if target == "cuda" and device.index is not None:
            options["cuda-device"] = device.index
        options.update(self._nccl_options(target))
        step = muir.compile(text, self._name + ".json", options)
        by_desc = {info[p]["desc_name"]: p for p in params}
        binds, hyper, takes, counts = [], [], [], []
        logits = []
        tables = _tables()
        blocks = {b[0] + ".max_logits": b for b in self._attention}
        buf = step.hyper_buffer
        for a in step.arguments:
            if a.role == "data" and a.name in blocks:
                logits.append((a.index, blocks[a.name][0],
                               blocks[a.name][3]))
                continue
            if a.role == "hyper":
                head, _, field = a.name.rpartition(".")
                buf[a.hyper_index] = float(a.default)
                if field in ("take", "step") and head in by_desc:
                    i = info[by_desc[head]]["index"]
                    (takes if field == "take" else counts).append(
                        (a.hyper_index, i))
                    continue
                where = _HYPER_FIELDS.get(field)
                k = head[len("overrides."):] if head.startswith(
                    "overrides.") else ""
                if where and k.isdigit() and int(k) < len(override_groups):
                    hyper.append((a.hyper_index,
                                  (override_groups[int(k)],) + where))
                continue
            if a.role == "counter":
                continue
            p, kind = by_desc.get(a.name), None
            if p is not None:
                kind = "param"
            elif a.name.endswith(".grad") and a.name[:-5] in by_desc:
                p, kind = by_desc[a.name[:-5]], "grad"
            else:
                for suffix, state_key in tables["of_suffix"].items():
                    base = a.name[:-len(suffix)]
                    if a.name.endswith(suffix) and base in by_desc:
                        p, kind = by_desc[base], state_key
                        break
            if p is None:
                step.close()
                raise muir.MuirError("muir.torch.Muon: the compiled step "
                                     "has an argument '%s' (%s) it cannot "
                                     "bind" % (a.name, a.role))
            want = info[p]["desc_shape"]
            if kind in tables["rows"]:
                want = want[:-1]
            if a.shape != want and not (a.shape == (1,) and want == ()):
                step.close()
                raise muir.MuirError(
                    "muir.torch.Muon: the step's '%s' has shape %s on rank "
                    "%d, not the tensor's %s (muir.torch binds whole "
                    "tensors)" % (a.name, a.shape, step.rank, want))
            binds.append((a.index, info[p]["index"],
                          tables["kind_of"][kind]))
        # The flags, one per member, are one run of hyperparameters
        # (lib/Import/BuildIR.cpp).
        takes.sort()
        first = takes[0][0] if takes else 0
        if [t for t, _ in takes] != list(range(first, first + len(takes))) \
                or sorted(i for _, i in takes) != list(members):
            step.close()
            raise muir.MuirError("muir.torch.Muon: the compiled step's take "
                                 "flags are not one run, one per parameter")
        c = _Compiled(step, binds, hyper, (first, [i for _, i in takes]),
                      counts, members, list(params))
        c.logits = logits
        self._cache[key] = c
        self._last_compiled = (members, key[1:3], structure, c)
        return c

    def _evict(self, keep=()):
        """Frees the least recently used compiled steps beyond
        max_compiled_steps (not those in `keep`)."""
        cache = getattr(self, "_cache", None)
        if cache is None:
            return
        for key in list(cache):
            if len(cache) <= self._max_compiled:
                break
            if any(cache[key] is c for c in keep):
                continue
            c = cache.pop(key)
            if self._last_compiled is not None and \
                    self._last_compiled[3] is c:
                self._last_compiled = None
            c.step.close()

    def compiled_steps(self):
        """The compiled steps held in memory (muir.Step objects), least
        recently used first; at most max_compiled_steps."""
        return [c.step for c in self._cache.values()]

    def close(self):
        """Frees the compiled steps (they are compiled again if needed)."""
        for c in self._cache.values():
            c.step.close()
        self._cache.clear()
        self._last_compiled = None

    def _describe(self, params):
        """The description's text for `params`, and the group of each
        override it writes (override k: the parameters of that group)."""
        info = self._info
        m, a = self._group_defaults["muon"], self._group_defaults["adamw"]
        by_group = {}
        for p in params:
            by_group.setdefault(info[p]["group"], []).append(p)
        overrides, override_groups = [], []
        for index, members in sorted(by_group.items()):
            use_muon = self._group_use_muon[index]
            # The run-time values are the step's arguments, passed from
            # param_groups at every run; the description holds the values
            # the group was added with as their defaults, so that the text
            # (and the on-disk cache's hash of it) does not change with a
            # schedule.
            o = {"names": [info[p]["desc_name"] for p in members]}
            initial = self._group_initial[index]
            o["lr"] = float(initial["lr"])
            o["weight_decay"] = float(initial["weight_decay"])
            if "momentum" in initial:
                o["momentum"] = float(initial["momentum"])
            if "betas" in initial:
                o["beta1"] = float(initial["betas"][0])
                o["beta2"] = float(initial["betas"][1])
                o["eps"] = float(initial["eps"])
            for key, v in self._structure(index):
                o[key] = bool(v) if key == "nesterov" else \
                    int(v) if key == "ns_steps" else \
                    float(v) if key == "scale_extra" else str(v)
            overrides.append(o)
            override_groups.append(index)
        # The grid's axis: "tp" where DTensor tensor parallel splits
        # matrices, else "dp" (FSDP2 and whole matrices).
        axes = {info[p]["split"]["axis"]: info[p]["name"]
                for p in params if info[p]["split"]}
        if len(axes) > 1:
            raise ParameterError(
                axes["tp"], "is split over a tensor-parallel mesh dim (\"tp\") "
                "but '%s' over another (FSDP2); one optimizer steps "
                "parameters split over one mesh dim" % axes["dp"])
        text = _description.describe(
            [(info[p]["desc_name"], info[p]["desc_shape"],
              info[p]["optimizer"], info[p]["split"] or info[p]["ep"] > 1,
              "f64" if info[p]["dtype"] is torch.float64 else None)
             for p in params],
            name=self._name, ep=self._ep,
            devices=self._devices or _parse_layout(
                self._layout, self._target or params[0].device.type,
                self._group),
            lr=float(m["lr"]), momentum=float(m["momentum"]),
            nesterov=bool(m["nesterov"]),
            weight_decay=float(m["weight_decay"]),
            ns_steps=int(m["ns_steps"]), schedule=str(m["schedule"]),
            scale_mode=str(m.get("scale_mode", "spectral")),
            scale_extra=float(m["scale_extra"]),
            normuon=self._normuon,
            ns_eps=self._extra["ns_eps"],
            momentum_kind=self._extra["momentum_kind"],
            coefficients=self._extra["coefficients"],
            adamw_lr=float(a["lr"]), adamw_betas=tuple(a["betas"]),
            adamw_eps=float(a["eps"]),
            adamw_weight_decay=float(a["weight_decay"]),
            overrides=overrides, mask=True,
            grid_axis=next(iter(axes), "dp"), **self._clip_blocks(params))
        return text, override_groups

    def description(self, params=None):
        """The JSON description step() compiles for `params` (default: all
        parameters, in order), with the present settings."""
        params = list(self._info) if params is None else list(params)
        return self._describe(params)[0]
