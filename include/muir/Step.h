/*===- muir/Step.h - muir's step library, C API -------------------*- C -*-===*
 *
 * A compiled optimizer step that a training loop calls on its own tensors.
 *
 *   MuirStep *s = muir_step_compile(text, size, "model.yaml", "target=cpu");
 *   for (i = 0; i < muir_step_num_arguments(s); ++i) {
 *     muir_step_argument(s, i, &a);           (name, role, shape)
 *     if (a.role <= MUIR_ROLE_DATA) muir_step_bind(s, i, my_pointer[i]);
 *   }
 *   muir_step_run(s, step, hyper, num_hyper, stream);   (every step)
 *   muir_step_close(s);
 *
 * Bound tensors are the caller's memory (host pointers on the CPU target,
 * device pointers on the CUDA target), contiguous row-major, of the
 * argument's shape and dtype (float32; float64 for a parameter described
 * with dtype f64, its gradient and its state), and updated in place: the
 *library never copies, reallocates or keeps them beyond the call.
 *Hyperparameters (each optimizer group's learning rate and weight decay) are
 *read at every run.
 *
 * Every function that can fail returns NULL or a non-zero status and leaves
 * a message for muir_step_last_error(); none exits or aborts the process,
 * with one exception: with several ranks, a collective that fails, or
 * waits longer than the runtime's watchdog (MUIR_RT_COLLECTIVE_TIMEOUT,
 * 60 s by default) for a rank that never comes, ends the process with
 * status 1 and a message, as an MPI error would (its peers cannot continue).
 * Under mpirun (OMPI_COMM_WORLD_SIZE set) the step's ranks are the job's MPI
 * world: every rank compiles the same source and runs the same steps.
 *
 * Process-wide: the ranks (every open step of a process must use the same
 * grid; they are joined by the first and left at exit), the CUDA device and
 * NCCL communicator (made by the first CUDA step). The settings
 * `deterministic`, `cuda-bf16` and the grouped-GEMM choice are the
 * runtime's too, and each run sets its own step's. A CPU step's
 * temporaries live at planned offsets of one block of the runtime's
 * process-wide arena (muirrt_alloc, muir-rt/Entries.def), whose pages stay
 * resident between runs; the process's malloc is left as it is.
 *
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_STEP_H
#define MUIR_STEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MuirStep MuirStep;

/* What an argument of the step is. */
enum MuirArgumentRole {
  MUIR_ROLE_PARAM = 0,  /* a parameter, updated in place */
  MUIR_ROLE_GRAD = 1,   /* its gradient, read (a trained MoE layer's: written) */
  MUIR_ROLE_STATE = 2,  /* optimizer state (momentum, exp_avg, exp_avg_sq) */
  MUIR_ROLE_DATA = 3,   /* an input the step reads: a trained MoE layer's
                           data, an attention block's <name>.max_logits */
  MUIR_ROLE_COUNTER = 4, /* the 1-based step counter (int64, not bound) */
  MUIR_ROLE_HYPER = 5   /* a hyperparameter (double, not bound) */
};

/* An argument's element type. */
enum MuirArgumentDtype {
  MUIR_DTYPE_F32 = 0, /* tensors: float32, row-major, contiguous */
  MUIR_DTYPE_I64 = 1, /* the step counter; a layer's tokens_per_expert */
  MUIR_DTYPE_F64 = 2  /* hyperparameters; the tensors of a parameter
                         described with dtype f64 */
};

typedef struct MuirStepArgument {
  /* Tensors: "mlp.up", "mlp.up.grad", "mlp.up.momentum", "x.exp_avg", ...;
   * hyperparameters: "<group>.lr" and "<group>.weight_decay" with group
   * "muon", "adamw" or "overrides.<k>" (the k-th override that sets it);
   * the counter: "step". */
  const char *name;
  int32_t role;            /* enum MuirArgumentRole */
  int32_t rank;            /* tensors: number of dimensions; scalars: 0 */
  const int64_t *shape;    /* this rank's part of the tensor */
  const int64_t *global_shape; /* the whole tensor (equal without splits) */
  double default_value;    /* hyperparameters: the description's value */
  int32_t hyper_index;     /* hyperparameters: index into run's `hyper` */
  int32_t updated;         /* 1 when the step writes the tensor */
  int32_t dtype;           /* enum MuirArgumentDtype */
} MuirStepArgument;

/* "muir 0.1.0". */
const char *muir_step_version(void);

/* An optimizer a description can name (the description reader's registry):
 * what a binding needs to keep a parameter's state and to feed its
 * run-time hyperparameters. The strings and arrays are the library's, valid
 * while it is loaded. */
typedef struct MuirOptimizerInfo {
  const char *name;            /* "muon", "adamw", "normuon" */
  int32_t orthogonalises;      /* 1: Muon's family (matrices and stacks) */
  int32_t step_count;          /* 1: reads the 1-based step counter */
  int32_t num_state;           /* its state tensors, in argument order: */
  const char *const *state_suffixes; /* the step's "<name><suffix>" */
  const char *const *state_keys;     /* a binding's state key
                                        ("momentum_buffer") */
  const int32_t *state_rows;   /* 1: one value per row ([m], [E, m]) */
  int32_t num_hyper;           /* its run-time hyperparameters' fields, */
  const char *const *hyper;    /* the step's "<group>.<field>" ("lr") */
  int32_t num_settings;        /* the keys of optimizer.<name>, in order */
  const char *const *setting_keys;     /* (their values: muir_setting_info) */
  const double *setting_defaults;      /* a real, integer or boolean's */
  const char *const *setting_choices;  /* a choice's default, else NULL */
  const int32_t *setting_unset;        /* 1: no default (qk_clip: off) */
} MuirOptimizerInfo;

/* How many optimizers there are; fills `out` for index in [0, that);
 * non-zero if out of range. */
int32_t muir_num_optimizers(void);
int muir_optimizer_info(int32_t index, MuirOptimizerInfo *out);

/* An optimizer setting (a key of a description's optimizer.muon, .normuon,
 * .adamw or an override) and the values it takes, as the description
 * reader checks them. */
enum MuirSettingKind {
  MUIR_SETTING_REAL = 0,    /* a number in [low, high] (ends as flagged) */
  MUIR_SETTING_INTEGER = 1, /* an integer in [low, high] */
  MUIR_SETTING_BOOLEAN = 2,
  MUIR_SETTING_CHOICE = 3,  /* one of `choices` */
  MUIR_SETTING_REAL_LIST = 4 /* a list of numbers (coefficients) */
};
typedef struct MuirSettingInfo {
  const char *key;             /* "lr", "momentum", "schedule", ... */
  int32_t kind;                /* enum MuirSettingKind */
  double low, high;            /* may be infinite */
  int32_t low_included, high_included;
  int32_t num_choices;
  const char *const *choices;
} MuirSettingInfo;

/* How many settings there are; fills `out` for index in [0, that);
 * non-zero if out of range. */
int32_t muir_num_settings(void);
int muir_setting_info(int32_t index, MuirSettingInfo *out);

/* A compile or run option of muir_step_compile's `options` (the tools'
 * --NAME flags), as the library declares it once: its kind ("boolean",
 * "integer", "choice", "string"), its default as text, a choice's names,
 * whether a binding's user sets it (1; 0: the binding does, as nccl-rank)
 * and its help. */
typedef struct MuirOptionInfo {
  const char *name;            /* "ns-mode", "syrk-chunk-rows", ... */
  const char *kind;
  const char *default_value;
  int32_t num_choices;
  const char *const *choices;
  int32_t user;
  const char *help;
} MuirOptionInfo;

/* How many options there are; fills `out` for index in [0, that);
 * non-zero if out of range. */
int32_t muir_num_options(void);
int muir_option_info(int32_t index, MuirOptionInfo *out);

/* Why the last failing call on this thread failed. */
const char *muir_step_last_error(void);

/* Compiles a step from `size` bytes of `source`: a description (YAML or
 * JSON) when `filename` ends in .yaml, .yml or .json, else muir IR (high,
 * planned or exec). `filename` names the source in error messages. `options`
 * (NULL or "") holds "name=value" items separated by spaces: the options
 * muir_option_info lists with their kinds, defaults and help
 * (docs/step-library.md tabulates them). With layer=NAME (and
 * layer-pass=forward|forward-only|backward|recompute) the step is a
 * description's MoE layer NAME as a pass a model calls, instead of the
 * optimizer step; its arguments are in docs/step-library.md; muir_step_run's
 * `counter` is then the call's token count, 0 to the layer's tokens_per_rank
 * (cache-dir keeps such passes too, one per layer, pass and bound).
 * Returns NULL on error. */
MuirStep *muir_step_compile(const char *source, size_t size,
                            const char *filename, const char *options);

/* Opens a step compiled ahead of time: a shared library that cache-dir
 * wrote (muir-step-<hash>.so). `options` as for muir_step_compile (those
 * that choose the program are in the library already; deterministic and
 * the NCCL ones apply). No compiler runs. NULL on error. */
MuirStep *muir_step_open(const char *path, const char *options);

int32_t muir_step_num_arguments(const MuirStep *step);
/* Fills `out` (valid until muir_step_close); non-zero if out of range. */
int muir_step_argument(const MuirStep *step, int32_t index,
                       MuirStepArgument *out);
/* The index of the argument named `name`, or -1. */
int32_t muir_step_find(const MuirStep *step, const char *name);
/* How many hyperparameters muir_step_run takes. */
int32_t muir_step_num_hyper(const MuirStep *step);
/* This process's rank, and the number of devices of the step's grid (the
 * ranks that run it). */
int32_t muir_step_rank(const MuirStep *step);
int32_t muir_step_world_size(const MuirStep *step);

/* Binds tensor argument `index` to `data` (the caller's memory, used in
 * place at every run until bound again). */
int muir_step_bind(MuirStep *step, int32_t index, void *data);

/* The first NaN or infinity among the bound tensors of role `role`
 * (MUIR_ROLE_GRAD: the gradients), in argument order: `*index` its argument
 * and `*element` its flat index, both -1 when every element is finite. CPU
 * target only (host memory); returns non-zero on the CUDA target. */
int muir_step_first_nonfinite(const MuirStep *step, int32_t role,
                              int32_t *index, int64_t *element);

/* Runs one step: `counter` is the 1-based step number (AdamW's bias
 * corrections); `hyper` holds muir_step_num_hyper values in hyper_index
 * order (NULL: the defaults); `stream` is a cudaStream_t for the CUDA
 * target. Every tensor argument must be bound. On the CUDA target with a
 * stream, the step is enqueued on it and the call returns without waiting;
 * with NULL, the step runs on the runtime's own stream after the work
 * queued on the legacy default stream (PyTorch's default stream), and the
 * call waits for it. */
int muir_step_run(MuirStep *step, int64_t counter, const double *hyper,
                  int32_t num_hyper, void *stream);

/* CUDA target with several ranks: rank 0 makes an NCCL unique id (256 hex
 * digits and a NUL into `hex`, 257 bytes), the caller distributes it (e.g.
 * through torch.distributed), and every rank compiles with
 * "nccl-id=<hex> nccl-rank=R nccl-world=N". */
int muir_step_nccl_unique_id(char *hex);

/* CPU target with several ranks outside mpirun: the collectives of every
 * step this process runs move their bytes through `exchange` (one
 * all-to-all of bytes over `size` ranks, this one `rank`; the contract is
 * muirrt_dist_set_transport's in muir-rt/Runtime.h), e.g. a torch.distributed
 * process group's all_to_all_single. Call before the first step with
 * several devices is compiled or opened, on every rank. NULL removes it.
 * Returns 0, else see muir_step_last_error. */
typedef int32_t (*MuirExchangeFn)(void *context, const void *send,
                                  const int64_t *send_bytes, void *recv,
                                  const int64_t *recv_bytes);
int muir_step_set_transport(MuirExchangeFn exchange, void *context,
                            int32_t rank, int32_t size);

void muir_step_close(MuirStep *step);

/* CPU steps keep their temporaries' pages resident between runs, in the
 * runtime's process-wide arena (as a caching allocator does): gives back
 * the pages past the blocks in use (all of them between runs) and returns
 * their bytes; the next run touches them again. muir_step_held_memory: the
 * bytes the arena holds resident now. */
size_t muir_step_release_memory(void);
size_t muir_step_held_memory(void);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_STEP_H */
