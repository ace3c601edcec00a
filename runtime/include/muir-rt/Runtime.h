/*===- muir-rt/Runtime.h - muir runtime C API -------------------*- C -*-===*
 *
 * The runtime that executes muir's exec modules. Plain C ABI, no MLIR
 * dependency, so a training script can link it without the compiler.
 *
 * Two halves:
 *  - kernels, called by compiled exec modules (raw pointers, contiguous
 *    row-major float32 buffers, shapes passed as integers);
 *  - a host API that owns named tensors (parameters, gradients, optimizer
 *    state), initialises them from a seed, and reads back observations and
 *    counters. Their files (loading and dumping .npy directories) are
 *    muir-rt/TensorFiles.h's, a library of their own for the tools.
 *
 * Functions that can fail return 0 on success and non-zero on failure; the
 * message is then available from muirrt_last_error().
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_RUNTIME_H
#define MUIR_RT_RUNTIME_H

#include "muir-rt/Collectives.h"
#include "muir-rt/GroupMask.h"
#include "muir-rt/Shapes.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--------------------------- kernels ----------------------------------===*/

/* The kernels and collectives compiled steps call, muirrt_<name>: declared
 * once, with their documentation, in muir-rt/Entries.def (the CUDA
 * runtime's muirrt_cuda_<name> take the same arguments). */
#define MUIR_RT_CPU_Cpu(DECLARATION) DECLARATION
#define MUIR_RT_CPU_Both(DECLARATION) DECLARATION
#define MUIR_RT_CPU_Cuda(DECLARATION)
#define MUIR_RT_ENTRY(NAME, TARGETS, RET, PARAMS)                              \
  MUIR_RT_CPU_##TARGETS(RET muirrt_##NAME PARAMS;)
#include "muir-rt/Entries.def"
#undef MUIR_RT_CPU_Cpu
#undef MUIR_RT_CPU_Both
#undef MUIR_RT_CPU_Cuda

/* Rows per block of muirrt_dgemm_sym's upper triangle (from n = 128 on;
 * smaller blocks measured slower), and the flops it performs for one
 * n x n product over k (the cost model prices the CPU's symmetric products
 * with it). */
static inline int64_t muirrt_symmetric_gemm_block(int64_t n) {
  return (n + 3) / 4 > 128 ? (n + 3) / 4 : 128;
}
static inline double muirrt_symmetric_gemm_flops(int64_t n, int64_t k) {
  if (n < 128)
    return 2.0 * (double)n * (double)n * (double)k;
  int64_t block = muirrt_symmetric_gemm_block(n);
  double flops = 0;
  for (int64_t r0 = 0; r0 < n; r0 += block) {
    int64_t rows = n - r0 < block ? n - r0 : block;
    flops += 2.0 * (double)rows * (double)(n - r0) * (double)k;
  }
  return flops;
}

/* f rounded to bf16, to nearest even (a NaN stays a quiet NaN). */
static inline uint16_t muirrt_bf16_round(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

/*===------------------------- observations -------------------------------===*/

/* The last data observed in `slot`, or NULL if none; *numel receives its
 * length. Valid until the next muirrt_observe on that slot. */
const float *muirrt_observation(int64_t slot, int64_t *numel);

/* Clears every observation slot. */
void muirrt_observations_clear(void);

/*===---------------------------- arena -----------------------------------===*/

/* The CPU steps' arena (muirrt_alloc, Entries.def): the bytes it holds
 * resident (the highest end its blocks reached since the last release),
 * and muirrt_arena_release_memory, which gives back the pages past the
 * live blocks (all of them between steps) and returns their bytes; the
 * next run touches them again. */
size_t muirrt_arena_bytes(void);
size_t muirrt_arena_release_memory(void);

/*===--------------------------- counters ---------------------------------===*/

typedef struct MuirRtCounters {
  int64_t gemm_calls;  /* muirrt_sgemm invocations (a batch counts once) */
  int64_t syrk_calls;  /* muirrt_ssyrk invocations */
  int64_t other_calls; /* normalize, transpose */
  double flops;        /* floating-point operations actually performed by
                          GEMM (2mnk per item) and SYRK (n(n+1)k per item;
                          a bf16 one on oneDNN: its GEMM blocks' 2mnk) */
} MuirRtCounters;

void muirrt_counters_get(MuirRtCounters *out);
void muirrt_counters_reset(void);

/*===------------------------- host: tensors ------------------------------===*/

typedef enum MuirRtRole {
  MUIRRT_ROLE_PARAM = 0, /* parameter: seeded N(0, 0.02^2) */
  MUIRRT_ROLE_GRAD = 1,  /* gradient: seeded N(0, 1) */
  MUIRRT_ROLE_STATE = 2, /* optimizer state: zeros */
  MUIRRT_ROLE_DATA = 3   /* training data and fixed weights: seeded
                            N(0, std^2), std from muirrt_tensor_set_init_std
                            (default 1) */
} MuirRtRole;

/* A host tensor's element type. */
typedef enum MuirRtDtype {
  MUIRRT_DTYPE_F32 = 0, /* float32, '<f4' in .npy files */
  MUIRRT_DTYPE_F64 = 1  /* float64, '<f8' (a reference's parameters) */
} MuirRtDtype;

typedef struct MuirRtContext MuirRtContext;

MuirRtContext *muirrt_context_create(void);
void muirrt_context_destroy(MuirRtContext *ctx);

/* Message of the last failing call on this thread ("" if none). */
const char *muirrt_last_error(void);

/* Registers a float32 tensor; returns its index (>= 0) or -1 on error
 * (duplicate name, rank > 8, non-positive dimension). Storage is allocated
 * 64-byte aligned and zero-filled. */
int32_t muirrt_tensor_add(MuirRtContext *ctx, const char *name, int32_t rank,
                          const int64_t *shape, int32_t role);
/* The same for a tensor of element type `dtype` (MuirRtDtype). */
int32_t muirrt_tensor_add_typed(MuirRtContext *ctx, const char *name,
                                int32_t rank, const int64_t *shape,
                                int32_t role, int32_t dtype);
/* Adds tensor `index` of `owner` to `ctx` on the same storage (its name,
 * shape, role, dtype and init std; `owner` keeps and frees the storage and
 * must outlive `ctx`'s use of it); -1 on error. */
int32_t muirrt_tensor_add_alias(MuirRtContext *ctx, const MuirRtContext *owner,
                                int32_t index);
/* The standard deviation of tensor `index`'s seeded values (any role);
 * non-zero on a bad index or a negative std. */
int muirrt_tensor_set_init_std(MuirRtContext *ctx, int32_t index, double std);
int32_t muirrt_tensor_count(const MuirRtContext *ctx);
int32_t muirrt_tensor_find(const MuirRtContext *ctx, const char *name);
const char *muirrt_tensor_name(const MuirRtContext *ctx, int32_t index);
int32_t muirrt_tensor_rank(const MuirRtContext *ctx, int32_t index);
const int64_t *muirrt_tensor_shape(const MuirRtContext *ctx, int32_t index);
int64_t muirrt_tensor_numel(const MuirRtContext *ctx, int32_t index);
int32_t muirrt_tensor_role(const MuirRtContext *ctx, int32_t index);
int32_t muirrt_tensor_dtype(const MuirRtContext *ctx, int32_t index);
/* A float32 tensor's storage (NULL for a float64 one). */
float *muirrt_tensor_data(MuirRtContext *ctx, int32_t index);
/* Any tensor's storage (numel elements of its dtype). */
void *muirrt_tensor_storage(MuirRtContext *ctx, int32_t index);

/* Fills every tensor not marked as loaded from `seed` according to its role.
 * Deterministic: depends only on the seed, the tensor's name and its size;
 * a float32 tensor holds the float32 rounding of a float64 one's values. */
void muirrt_init_from_seed(MuirRtContext *ctx, uint64_t seed);

/* Tensor `index` of ctx as a rank's part of a whole tensor of the same
 * name: of `global_shape` (the tensor's rank), the part at `offset` in each
 * dimension. muirrt_init_part_from_seed fills it, unless it was loaded
 * (muirrt_load_dir_parts, muir-rt/TensorFiles.h), with the values
 * muirrt_init_from_seed gives the whole tensor there (bit for bit). */
void muirrt_init_part_from_seed(MuirRtContext *ctx, int32_t index,
                                uint64_t seed, const int64_t *global_shape,
                                const int64_t *offset);

/* Staging (cpu/Staging.cpp). An output of more than one file is built in
 * a staging directory beside its destination, on the same file system:
 * muirrt_stage_dir creates `.<name>.muir-staging-<pid>-XXXXXX` beside DIR
 * (creating DIR's parent folders; removing staging directories that
 * processes no longer running left) and writes its path to `out`;
 * muirrt_stage_commit puts it in DIR's place in one rename (an existing
 * directory is swapped with it, RENAME_EXCHANGE, and the old one removed;
 * a link to a directory: the directory it names); muirrt_stage_abort
 * removes it. Staging paths, and paths given to muirrt_cleanup_register,
 * are removed when SIGINT, SIGTERM or SIGHUP arrives (then the signal
 * takes its previous course) or by muirrt_cleanup_now. */
int muirrt_stage_dir(const char *dir, char *out, size_t size);
int muirrt_stage_commit(const char *staged, const char *dir);
void muirrt_stage_abort(const char *staged);
/* Removes the staging directories beside DIR of processes that no longer
 * run (as muirrt_stage_dir does before it stages): a launcher calls it once
 * its ranks have ended, however they ended. */
void muirrt_stage_sweep(const char *dir);
int muirrt_cleanup_register(const char *path);
void muirrt_cleanup_unregister(const char *path);
void muirrt_cleanup_now(void);

/*===-------------------------- host: metrics -----------------------------===*/

/* ||X^T X - I||_F for tall X (m > n), ||X X^T - I||_F otherwise, X m x n
 * row-major, accumulated in double. */
double muirrt_orthogonality_error(const float *x, int64_t m, int64_t n);

/* The singular values of X (m x n row-major) in ascending order, min(m, n)
 * of them, into `sigma`: the square roots of the eigenvalues of the Gram
 * matrix (X^T X for tall X, else X X^T), accumulated in double, from
 * LAPACK (OpenBLAS). Squaring costs accuracy only near zero: each is
 * within about 1e-7 times the largest of the exact value. Returns 0, or
 * -1 (see muirrt_last_error) on bad arguments or a LAPACK failure. */
int muirrt_singular_values(const float *x, int64_t m, int64_t n, double *sigma);

/* The index of the first NaN or infinity in x, or -1 if every value is
 * finite (a bit test, at memory speed). */
int64_t muirrt_first_nonfinite(const float *x, int64_t numel);
int64_t muirrt_first_nonfinite_f64(const double *x, int64_t numel);

/* ||x||_2 accumulated in double. */
double muirrt_norm(const float *x, int64_t numel);

/* ||x - y||_2 accumulated in double. */
double muirrt_diff_norm(const float *x, const float *y, int64_t numel);


/*===------------------------ distributed (MPI) ---------------------------===*/

/* The ranks of a run form a grid with named axes (muir.grid): rank r has
 * coordinates row-major over the axes, the last axis fastest. A collective
 * names a set of axes as a bit mask (bit i = axis i); its group is the ranks
 * that differ only in those axes, ordered row-major over them.
 *
 * muirrt_dist_init initialises MPI if needed (MPI_THREAD_FUNNELED) and checks
 * that the world size equals the product of the sizes; without MPI support
 * compiled in, or with a one-rank grid, everything works on one rank.
 * Returns 0 on success (else see muirrt_last_error). */
int muirrt_dist_init(int32_t num_axes, const int64_t *sizes);
/* A transport that moves the collectives' bytes instead of MPI, e.g. a
 * torch.distributed process group (muir.torch under torchrun). `exchange`
 * is one all-to-all of bytes over the transport's `size` ranks, which every
 * rank calls at the same point of its run: it sends send_bytes[j] bytes to
 * rank j and receives recv_bytes[j] bytes from rank j, the pieces of `send`
 * and of `recv` contiguous in rank order (the two never overlap); it
 * returns 0, or non-zero after saying why (the run then ends). The
 * collectives keep their contract and their bits: every reduction is
 * muir's own, in group-rank order (muirrt_set_deterministic(0)'s
 * all-reduce included), and the collective timeout is the transport's
 * (no MUIR_RT_COLLECTIVE_TIMEOUT watchdog).
 * Register before muirrt_dist_init, on every rank: muirrt_dist_init then
 * takes `rank` and `size` from it and never initialises MPI. NULL
 * `exchange` removes it (before muirrt_dist_init, or after
 * muirrt_dist_finalize). Returns 0, or non-zero (see muirrt_last_error)
 * for bad arguments, a grid already running, or a runtime built without
 * MPI support, whose collectives this one carries. */
typedef int32_t (*muirrt_exchange_fn)(void *context, const void *send,
                                      const int64_t *send_bytes, void *recv,
                                      const int64_t *recv_bytes);
int muirrt_dist_set_transport(muirrt_exchange_fn exchange, void *context,
                              int32_t rank, int32_t size);
/* Registers another factorisation of the same ranks into axes (an MoE
 * folding: Megatron's edp x ep over the attention grid's devices), row-major
 * like the grid. Returns its index f >= 1; masks for its axes carry f
 * (muirrt_group_mask, muir-rt/GroupMask.h). -1 on error (see
 * muirrt_last_error).
 * Call after muirrt_dist_init, the same on every rank. */
int32_t muirrt_dist_add_folding(int32_t num_axes, const int64_t *sizes);
int32_t muirrt_dist_rank(void);  /* 0 before init */
int32_t muirrt_dist_size(void);  /* 1 before init */
int64_t muirrt_dist_coord(int32_t axis);
/* Size of the group named by axes_mask and this rank's index in it. */
int64_t muirrt_dist_group_size(int64_t axes_mask);
void muirrt_dist_barrier(void);
/* The lowest world rank whose `mine` is non-zero, or -1 if none (every
 * rank calls it; a control exchange, not counted by muirrt_comm_*). */
int32_t muirrt_dist_first(int32_t mine);
void muirrt_dist_finalize(void);

/* Which bytes each collective sends (the counters below count them),
 * the reduction codes and the group of an axes mask: muir-rt/Collectives.h,
 * shared with the CUDA runtime and the plan report. */

/*===----------------------- fingerprint tracing -------------------------===*/

/* One buffer of one executed op (muir_exec.trace): the step, the op's
 * execution number in the step (seq), its id, the operand index, whether
 * it was written (after the op) or read (before), its size and the XXH64
 * hash (seed 0) of its bytes. */
typedef struct MuirRtTraceRecord {
  int64_t step, seq, op_id, index;
  int32_t output;
  int64_t bytes;
  uint64_t hash;
} MuirRtTraceRecord;

/* Starts (on != 0) or stops recording, clearing the records. The test-only
 * MUIR_TEST_PERTURB="step:rank:seq" flips the lowest bit of the first byte
 * of that execution's first written buffer. */
void muirrt_trace_enable(int32_t on);
void muirrt_trace_set_step(int64_t step);
int64_t muirrt_trace_count(void);
const MuirRtTraceRecord *muirrt_trace_records(void);

/* The threads OpenBLAS runs a product on (OPENBLAS_NUM_THREADS; muir-run
 * --ranks gives each rank cores / ranks). OpenBLAS's bits depend on it, so
 * a fingerprint trace records it. */
int32_t muirrt_blas_threads(void);
/* Sets it (the layout-invariant mode runs every product on one thread). */
void muirrt_set_blas_threads(int32_t threads);

/* Deterministic reductions (on, the default): every all-reduce gathers the
 * group's pieces and sums them in group-rank order, so results do not
 * depend on timing or on MPI's algorithm. Off: muirrt_all_reduce uses
 * MPI_Allreduce (faster with many ranks; its order is MPI's). */
void muirrt_set_deterministic(int32_t on);
/* The setting in force (1: deterministic). */
int32_t muirrt_deterministic(void);

/* Gathers `count` int64 from every group rank, in group-rank order. */
void muirrt_all_gather_i64(int64_t axes_mask, const int64_t *in,
                           int64_t *out, int64_t count);

/* Ragged all-to-all of rows of row_bytes bytes whose counts every rank
 * knows already: send_rows[j] rows (back to back) to group rank j,
 * recv_rows[j] rows from it, packed in group-rank order. Counts the bytes
 * of the rows sent to the g - 1 others; no count exchange. */
void muirrt_all_to_allv_bytes(int64_t axes_mask, const void *in,
                              const int64_t *send_rows, void *out,
                              const int64_t *recv_rows, int64_t row_bytes);

/* Prints "muir runtime: fn: message" and ends this process with exit
 * status 1, nothing else printed; under mpirun the other ranks end with it
 * (the collectives that find a fault find it on every rank, and each
 * prints its own line). */
void muirrt_abort_run(const char *fn, const char *message);

/* A function the runtime calls once before it ends the run on a fatal
 * error (for example to remove a half-made output directory); NULL: none. */
void muirrt_set_abort_hook(void (*hook)(void));

/* Bytes this rank sent and collective calls it made on the group named by
 * axes_mask, since the last reset. */
int64_t muirrt_comm_bytes(int64_t axes_mask);
int64_t muirrt_comm_calls(int64_t axes_mask);
void muirrt_comm_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_RUNTIME_H */
