"""muir's compiled Muon step as a PyTorch optimizer (and NorMuon's:
muir.torch.NorMuon, the same optimizer with NorMuon's row normalisation;
see its documentation).

    import muir.torch
    opt = muir.torch.Muon(model.named_parameters(), lr=0.02,
                          weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)
    for batch in data:
        loss = model(batch); loss.backward()
        opt.step(); opt.zero_grad(); sched.step()

Parameters, as torch.optim takes them: `model.parameters()` (plain
tensors, named "param0", "param1", ... by their place), `model.named_
parameters()` (or a Module, or a dict of name -> tensor), or a list of
group dicts {"params": [...], "use_muon": bool, "lr": ..., ...} whose
"params" are tensors or (name, tensor) pairs. Names need not be unique:
as torch.optim does, it takes two modules' named_parameters() that both
hold "weight" (in one list, in two groups, or added later). Names appear
in errors, are matched by adamw_patterns and, where every name is unique
and none can be taken for another's gradient or state, are the compiled
step's argument names (otherwise the parameters' places, "p0", "p1", ...,
are); a name two parameters share cannot pick an attention block's q or k
(give the tensor).

Which parameters take Muon. In a group with "use_muon": True, all of
them (2-D matrices, 3-D stacks [E, out, in] per matrix, 4-D convolution
weights [out, in, kh, kw] as the matrix [out, in*kh*kw], as Keller
Jordan's Muon does); with False, AdamW. Otherwise (plain or named
parameters, or a group without use_muon) each is assigned
(muir.description.assign): 2-D, 3-D and 4-D ones take Muon unless their
name matches one of `adamw_patterns` (Python fnmatch globs on the whole
name; the default, muir.description.DEFAULT_ADAMW_PATTERNS, catches
embeddings and output heads); everything else takes AdamW. A tensor's
`_muir_optimizer` attribute ("muon" or "adamw") decides instead
(muir.torch.MoE's router says "adamw"). Plain or named parameters form
two param groups, `optimizer.param_groups[0]` (Muon, "use_muon": True) and
`[1]` (AdamW, "use_muon": False), either possibly empty; a list of group
dicts gives one group each, in order (a group without use_muon holds
"use_muon": None, and both kinds). add_param_group adds a group at any
time; its parameters take part from the next step() on.

Group keys. A group of Muon parameters reads lr, weight_decay, momentum,
nesterov, ns_steps, schedule, scale_mode and scale_extra; of AdamW
parameters lr, weight_decay, betas and eps; a mixed group all of them.
Keys a group leaves out take the constructor's values (a use_muon=False
group: adamw_lr, adamw_weight_decay, adamw_betas, adamw_eps).

Hyperparameters at run time. lr, weight_decay, momentum (Muon), betas
and eps (AdamW) are read from each group at every step() and passed to
the compiled step as arguments ("overrides.<k>.lr", ".momentum",
".beta1", ...: one override of the step's description per group), so
changing them by hand or with torch.optim.lr_scheduler never compiles:
OneCycleLR and CyclicLR with cycle_momentum=True cycle Muon's momentum
(the "momentum" those schedulers write to an AdamW-only group is not
read). Only the structural settings (nesterov, ns_steps, schedule,
scale_mode, scale_extra, and the set of parameters taking part) compile
a step, once per distinct value.
The constructor and every step() check the values with the description
reader's ranges (lib/Import/Description.cpp): lr and weight_decay finite
in [0, inf), momentum and each of betas in [0, 1), eps and scale_extra in
(0, inf), nesterov True or False, ns_steps an integer >= 1 (its upper
limit is the reader's, at compile), schedule and scale_mode one of their
names; a bad one raises ParamGroupError (a ValueError) naming the group,
the key and the range, and nothing is updated. The groups' keys are
those above, "params" and "use_muon" (both fixed when the group is
added), and the keys torch's lr schedulers add (SCHEDULER_KEYS:
initial_lr, max_lr, min_lr, base_momentum, max_momentum, swa_lr; not
read). Any other key (a typo such as "weight_decy", a setting of the other
optimizer), a removed one, or other "params" raise ParamGroupError at the
next step(), naming the key.

`adamw_lr=None` means the same lr as Muon, as Moonlight does: the default
spectral scale 0.2 * sqrt(max(m, n)) is chosen so that Muon's update RMS
matches AdamW's, and one learning rate (and schedule) serves both groups.
With scale_mode "shape" or "unit_rms" (Keller Jordan's convention, lr
around 0.02 for Muon) give AdamW its own lr (e.g. 3e-4).

step(): the parameters with a gradient take part (those without are
skipped, their state untouched, as torch optimizers do). The compiled step
holds every parameter that has taken part in some step (its members, per
device): one without a gradient now is skipped by its run-time flag (the
description's optimizer.mask, "<name>.take" = 0), bit for bit, without
compiling; each AdamW parameter counts its own steps ("<name>.step"). A
parameter taking part for the first time (one added by add_param_group, or
frozen until now) compiles the step once more; one that never has a
gradient costs nothing. A skipped member's arguments are bound to its
state (read and written back unchanged): its element-wise passes and its
Newton-Schulz still run, so skipping saves no time. Every one of them
must be float32, bfloat16 or float64, the dtype it had when the
optimizer was built (its gradient of its dtype, or float32 for a bfloat16
one), on the device of the step's
target (CPU tensors: target cpu; CUDA tensors: target cuda on their
device, run on the current stream, after the work queued there; the CUDA
path has not run on a GPU yet) and of the shape it had when the optimizer
was built;
otherwise step() raises ParameterError naming the parameter and updates
nothing. A non-contiguous gradient (a channels_last one, a view) is read
through a contiguous copy; a non-contiguous parameter is updated in a
contiguous copy written back into it. A bfloat16 parameter is updated as
mixed-precision training expects: its optimizer state is float32, the
step's maths float32 on the parameter's value (a float32 copy of it and
of its gradient), and the result rounded once to bfloat16 (to nearest,
ties to even) when it is written back: within one bfloat16 ulp of the
float64 step. A float64 parameter is computed in float64 throughout, its
state float64 (a reference for the float32 steps: within 1e-8 of the
float64 step's formulas), on the CPU target and one rank. Before the
step, as muir-run does, the gradients are checked for NaN and infinities
(check_finite=True; one sum per gradient and one read of their total on
the host, at memory speed; the elements are searched only when the total
is not finite): one raises NonFiniteGradientError (a
ParameterError) naming the parameter, the element and its value, and
nothing is updated: no parameter, no optimizer state, no step count
(catch it to skip the step, as torch.amp.GradScaler does).
check_finite=False (or `optimizer.check_finite = False`) turns the check
off. With several ranks every rank must hold the same gradients, so all
stop together.
check_replicas=True (or `optimizer.check_replicas = True`; off by default)
checks before the step that every rank holds the same gradients: the
hash of each gradient (the sum of its elements' bit patterns, exact) is
all-reduced as a maximum and a minimum over torch.distributed (which must
be initialised), two collectives of one int64 per tensor; a difference
raises ParameterError naming the parameter, and nothing is updated (a
missing gradient all-reduce would otherwise desynchronise the ranks).
The step updates the parameters' own storage (p.data_ptr() stays),
reading p.grad; muir's step is compiled once per set of members (and
structural settings) and kept, in memory (at most
max_compiled_steps, default DEFAULT_MAX_COMPILED_STEPS = 8: the least
recently used is freed first; `optimizer.compiled_steps()` lists those
held) and, for the CPU target, on disk (cache_dir below). The state lives in
`optimizer.state[p]`: "momentum_buffer" (Muon), "exp_avg", "exp_avg_sq" and
"step" (an int, AdamW's 1-based count), so state_dict()/load_state_dict()
and torch.save checkpoints work (with any number of groups) and a resumed
run equals the continuous one bitwise (load_state_dict keeps a bfloat16
parameter's state float32, where torch.optim's would cast it to
bfloat16), also on another number of ranks
(the state is whole on every rank: saved on 2 ranks, it continues on 1,
and the other way round). An expert stack of a muir.torch.MoE with ep > 1
and its state hold this rank's experts; state_dict() records which
("muir_experts"), and muir.torch.full_state_dict(optimizer) (and
full_state_dict(model) for the model) gathers them whole over
torch.distributed, a state that loads on any ep: load_state_dict keeps
each rank's experts' rows of any state that holds them (a whole one, or
the part of a rank that held more experts) and refuses one that does not
(another rank's part), naming the parameter, as it refuses a record
that is not [lo, hi, experts] with integers 0 <= lo < hi <= experts.
load_state_dict refuses, with
a ValueError naming the group or the parameter, a state made for other
groups (their count, sizes, use_muon) or other shapes, before loading
anything. copy.deepcopy (and
pickling) copies the optimizer with its parameters and state; the copy
compiles its own steps.

Several ranks: under mpirun (OMPI_COMM_WORLD_SIZE), or with
torch.distributed initialised (torchrun), layout defaults to "dp=<world
size>": Newton-Schulz is shared out over the ranks (each matrix on one
rank, the results gathered) and every rank ends with the same parameters
as one rank would, given the same (already averaged) gradients on every
rank. On the CPU target the ranks are mpirun's MPI world, else
torch.distributed's group: process_group=G or device_mesh=M (a 1-D mesh,
or one holding every rank) as keywords, else the default group (when its
backend moves CPU tensors: gloo); the compiled steps' collectives then run
over it (one all_to_all_single of bytes per exchange), with the bits of the
same layout under mpirun (docs/design.md, "Transports";
test/Python/torch-torchrun.test). Every rank of the group must step the
same parameters (as after DDP's all-reduce); layout="dp=1" keeps each
rank's step its own. A process's steps (and its MoE layers') run over one
group. process_group and device_mesh are for the CPU target; on the CUDA
target under
torchrun (torch.distributed initialised, no mpirun), rank 0 makes an NCCL
unique id (muir.nccl_unique_id) and torch.distributed broadcasts it, so
muir's communicator spans the job's ranks.
Expert stacks of a muir.torch.MoE with ep > 1 (marked `_muir_ep`) hold
this rank's experts only: the step declares them split over ep (the MoE
folding edp x ep of the same ranks) and each rank steps its own, per
expert, never shared out; they take Muon (an ep stack cannot take AdamW).
Checkpoints that load on another number of ranks: full_state_dict, above.

FSDP2 and DTensor parameters (torch.distributed.fsdp.fully_shard, or
any DTensor on a 1-D mesh of the group's ranks in order; HSDP's 2-D mesh
of replicas x shards). A matrix held as Shard(0) (its rows split evenly
over the ranks) is declared split over dp (`shard {kind: fsdp, axis:
dp}`): each matrix is orthogonalised whole on one owner rank (matrices
assigned to the ranks by cost, as muir-distribute does), never per shard
and never twice, its blocks sent back into the shards; a Replicate() one
is a whole matrix as above. Under HSDP each replica group steps over its
shard dim's group (the optimizer joins it when no group is given).
AdamW parameters are element-wise: each rank updates its own shard (any
split). The state tensors are DTensors of the parameter's placement, so
state_dict() is what torch.distributed.checkpoint (DCP) saves and
get_optimizer_state_dict / set_optimizer_state_dict reshard to another
number of ranks; load_state_dict also takes whole (plain) state tensors,
keeping this rank's rows, and full_state_dict gathers them whole. A
matrix whose split dim the ranks do not divide, a Partial placement, one
split over two mesh dims, tensor-parallel and FSDP2 splits in one
optimizer, a mesh of more than two dims and one other than the step's
ranks are refused, naming the
parameter (test/Python/torch-fsdp.test). muir.torch.get_state_dict and
set_state_dict are torch.distributed.checkpoint.state_dict's, with the
expert stacks of muir.torch.MoE(ep > 1) layers (and their state) as
DTensors over the expert-parallel ranks, so that DCP saves every expert
once and loads them on any ep (examples/torch/train_fsdp.py).

MuonClip (Kimi K2's QK-clip): qk_clip=tau with attention=[{"name": ...,
"q": ..., "k": ..., "heads": H, "kv_heads": G}, ...] (q and k: parameters
of this optimizer, as tensors or by name; float32, bfloat16 or float64
matrices of H * d and G * d_k rows; kv_heads defaults to heads) clips each
block's query and key projections after their update, and step() then takes
max_logits={name: tensor [H]}: the largest pre-softmax logit of each
query head in this step's forward (with several ranks, the maximum over
all of them: every rank passes the same values). With
gamma_h = min(1, tau / max_logits_h), the rows of query head h are
multiplied by sqrt(gamma_h), those of kv head g by the square root of the
smallest gamma_h of its H / G query heads; the optimizer state is not
changed (docs/description.md, "MuonClip"). A block whose q and k have no
gradient now needs no max_logits (they are skipped); a missing, unknown,
misshapen or non-finite entry raises ValueError and nothing is updated.
Either optimizer (Muon, NorMuon) updates q and k first. On the CUDA
target the clip is generated kernels, not yet run on a GPU.

Keyword-only arguments:
  ns_eps (None: 1e-7), momentum_kind (None: "ema"; or "accumulate"),
  coefficients (a flat list for schedule "custom"): the description's
  optimizer.muon settings;
  name: the description's name;
  cache_dir: where compiled CPU steps are kept between processes (muir's
  cache-dir option: a shared library per step, named by a hash of the
  description, the options, the build and the host CPU, loaded instead of
  compiling next time). Default $MUIR_CACHE_DIR, else
  $XDG_CACHE_HOME/muir, else ~/.cache/muir; None or "" (or
  MUIR_CACHE_DIR="") for none (muir.cache_dir(); muir.torch.MoE keeps its
  layers' passes there too). The CUDA target compiles every time.
  options: a dict of compile options for muir.compile;
  ns_mode, ns_form, ns_precision, dp_assign, deterministic, syrk, batch,
  fuse_syrk_all_reduce, machine, syrk_chunk_rows, probe_updates, cuda_arch,
  cuda_bf16, cuda_graph: the step library's options a user sets
  (muir.options(), docs/step-library.md's table), None for the library's
  default.
"""
from muir._moe import MoE, MoEInputError
from muir._moe_ddp import prepare_ddp
from muir._errors import (
    NonFiniteGradientError, ParamGroupError, ParameterError)
from muir._checkpoint import (
    full_state_dict, get_state_dict, set_state_dict)
from muir.torch._common import SCHEDULER_KEYS, DEFAULT_MAX_COMPILED_STEPS
from muir.torch._muon import Muon, NorMuon

# Documented, pickled and shown as muir.torch's (help(), repr, torch.save
# of a whole optimizer), wherever in the package they are defined.
Muon.__module__ = NorMuon.__module__ = __name__

__all__ = ["Muon", "NorMuon", "MoE", "MoEInputError", "prepare_ddp",
           "full_state_dict", "get_state_dict", "set_state_dict",
           "ParameterError",
           "NonFiniteGradientError", "ParamGroupError", "SCHEDULER_KEYS",
           "DEFAULT_MAX_COMPILED_STEPS"]
