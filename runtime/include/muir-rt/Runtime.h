/*===- muir-rt/Runtime.h - muir runtime C API -------------------*- C -*-===*
 *
 * The runtime that executes muir's exec modules. Plain C ABI, no MLIR
 * dependency, so a training script can link it without the compiler.
 *
 * Two halves:
 *  - kernels, called by compiled exec modules (raw pointers, contiguous
 *    row-major float32 buffers, shapes passed as integers);
 *  - a host API that owns named tensors (parameters, gradients, optimizer
 *    state), initialises them from a seed or loads them from .npy files,
 *    dumps them atomically, and reads back observations and counters.
 *
 * Functions that can fail return 0 on success and non-zero on failure; the
 * message is then available from muirrt_last_error().
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_RUNTIME_H
#define MUIR_RT_RUNTIME_H

#include "muir-rt/GroupMask.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--------------------------- kernels ----------------------------------===*/

/* C[i] = alpha * op(A[i]) * op(B[i]) + beta * Acc[i] for i in [0, batch).
 * op(A) is m x k, op(B) is k x n, C is m x n. A is stored m x k (k x m when
 * trans_a), B is stored k x n (n x k when trans_b); all contiguous row-major,
 * consecutive batch items packed back to back. Acc is `acc` (C's shape; it
 * may be c itself) or, when acc is NULL, C. beta == 0 ignores the
 * accumulator. Acc is scaled into C first and BLAS adds the product (as a
 * BLAS with beta scales C, then adds). */
void muirrt_sgemm(int64_t batch, int32_t trans_a, int32_t trans_b, int64_t m,
                  int64_t n, int64_t k, float alpha, const float *a,
                  const float *b, float beta, float *c, const float *acc);

/* C = op(A) op(B) (2-D, shapes as muirrt_sgemm's) where every element is
 * the sum of its k products in ascending order (each product rounded, then
 * added): a row's result has the same bits for any m, any position of the
 * row and any blocking (BLAS does not promise that). muir.matmul
 * row_stable; slower than sgemm. */
void muirrt_gemm_rows(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                      int64_t k, const float *a, const float *b, float *c);

/* muirrt_sgemm in double (the Gram form of Newton-Schulz). */
void muirrt_dgemm(int64_t batch, int32_t trans_a, int32_t trans_b, int64_t m,
                  int64_t n, int64_t k, double alpha, const double *a,
                  const double *b, double beta, double *c, const double *acc);

/* muirrt_dgemm of square matrices whose product (and accumulator) is
 * known symmetric: computes the upper triangle (from n = 128 on, in blocks
 * of rows) and mirrors it. */
void muirrt_dgemm_sym(int64_t batch, int32_t trans_a, int32_t trans_b,
                      int64_t m, int64_t n, int64_t k, double alpha,
                      const double *a, const double *b, double beta,
                      double *c, const double *acc);
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

/* C[i] = alpha * A[i] * A[i]^T + beta * Acc[i]; A is n x k (with trans, A
 * is k x n and the product A^T A), C is n x n, all contiguous row-major; the
 * accumulator (`acc`, or C when NULL) is symmetric. Computed with a
 * symmetric rank-k update (about half the flops of the GEMM); both
 * triangles of C are written. */
void muirrt_ssyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                  float alpha, const float *a, float beta, float *c,
                  const float *acc);

/* muirrt_ssyrk in double (the Gram form of Newton-Schulz). */
void muirrt_dsyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                  double alpha, const double *a, double beta, double *c,
                  const double *acc);

/* muirrt_ssyrk of an f32 A into f64 C: the products accumulated in double
 * (A converted a block at a time; the Gram form's A0 = X X^T). */
void muirrt_ssyrk_f64(int64_t batch, int32_t trans, int64_t n, int64_t k,
                      double alpha, const float *a, double beta, double *c,
                      const double *acc);

/* muirrt_sgemm and muirrt_ssyrk on bf16 buffers (a Newton-Schulz iterate
 * of precision bf16; bf16 as its 16 bits): the operands widened to f32,
 * the products accumulated in f32, the result rounded to bf16 to nearest
 * even (muirrt_bf16_round). */
void muirrt_bgemm(int64_t batch, int32_t trans_a, int32_t trans_b, int64_t m,
                  int64_t n, int64_t k, float alpha, const uint16_t *a,
                  const uint16_t *b, float beta, uint16_t *c,
                  const uint16_t *acc);
void muirrt_bsyrk(int64_t batch, int32_t trans, int64_t n, int64_t k,
                  float alpha, const uint16_t *a, float beta, uint16_t *c,
                  const uint16_t *acc);
/* f rounded to bf16, to nearest even (a NaN stays a quiet NaN). */
static inline uint16_t muirrt_bf16_round(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

/* Per n x n double matrix A of `batch`: s = 1 / (sqrt(trace(A)) + eps)
 * (trace summed in order; a negative rounding counts as 0), out = s^2 A,
 * scale[b] = s (muir.trace_normalize). */
void muirrt_trace_normalize(int64_t batch, int64_t n, double eps,
                            const double *in, double *out, double *scale);

/* out[b] = scale[b] * in[b] for `batch` matrices of `count` doubles,
 * rounded once to float (_f32) or kept in double (_f64). */
void muirrt_scale_matrices_f32(int64_t batch, int64_t count,
                               const double *in, const double *scale,
                               float *out);
void muirrt_scale_matrices_f64(int64_t batch, int64_t count,
                               const double *in, const double *scale,
                               double *out);

/* Rows [row_begin, row_end) of the upper triangle of alpha * A A^T (A^T A
 * with trans), for each of `batch` items: c[r][j] for row_begin <= r <
 * row_end and j >= r; the rest of c is left as it is. Each entry is the same
 * K-sequential product as muirrt_ssyrk's (ssyrk of the diagonal block,
 * sgemm of the block to its right), counted as one SYRK call with the
 * chunk's flops (over all chunks, muirrt_ssyrk's n (n + 1) k). */
void muirrt_ssyrk_rows(int64_t batch, int32_t trans, int64_t n, int64_t k,
                       float alpha, const float *a, float *c,
                       int64_t row_begin, int64_t row_end);

/* Top-k expert routing (muir.route) of `tokens` rows of `experts` router
 * logits: per token, scores s = softmax(logits) (scoring 0; in double, a
 * fixed order) or sigmoid(logits) (scoring 1); selection scores s + bias
 * (bias NULL: none); with n_group > 1 only the experts of the topk_group
 * groups with the best scores (a group's score: the sum of its two best
 * selection scores, or its best for groups of one) compete; the k best
 * selection scores, ties to the lower expert index, give indices[t][0..k)
 * in decreasing order. weights = s at those experts, or with
 * softmax_after_topk the softmax of their k logits; with normalize divided
 * by their sum; times scaling. counts[e] = the (token, slot) pairs that
 * chose e. indices and counts are int64. */
void muirrt_route(int64_t tokens, int64_t experts, int64_t k,
                  const float *logits, const float *bias, int32_t scoring,
                  int32_t softmax_after_topk, int32_t normalize,
                  int64_t n_group, int64_t topk_group, float scaling,
                  int64_t *indices, float *weights, int64_t *counts);

/* Per-expert products over ragged row groups (muir.grouped_matmul): the
 * `rows` x k rows of `in` are grouped in expert order, sizes[e] rows for
 * expert e; group e's rows times op(w[e]) (w is [experts, k, n], or with
 * trans_w [experts, n, k]) go to the same rows of `out` (rows x n); rows
 * past the total are zero. A negative size, or a total above `rows`, ends
 * the run with a message naming the expert and the counts. */
void muirrt_grouped_gemm(int64_t experts, int64_t rows, int64_t k, int64_t n,
                         const float *in, const float *w, int32_t trans_w,
                         const int64_t *sizes, float *out);

/* Weight gradients of muirrt_grouped_gemm: for each expert e with rows
 * (sizes[e] of them, expert-major in `in` [rows, k] and `grad` [rows, n]),
 * dw[e] = in_e^T grad_e ([k, n]), or with trans_w grad_e^T in_e ([n, k]);
 * zero for an empty expert. */
void muirrt_grouped_gemm_wgrad(int64_t experts, int64_t rows, int64_t k,
                               int64_t n, const float *in, const float *grad,
                               int32_t trans_w, const int64_t *sizes,
                               float *dw);

/* Capacity-factor drops (muir.capacity): in each block of group_tokens
 * tokens (0: all), expert e keeps at most ceil(capacity_factor * G * k /
 * experts) of the (token, slot) pairs that chose it: policy 0 the highest
 * weights (ties to the earlier token), 1 the earliest tokens. Dropped slots
 * get index -1 and weight 0; counts[e] = kept pairs. Index -1 in the input
 * stays dropped. */
void muirrt_capacity(int64_t tokens, int64_t k, int64_t experts,
                     double capacity_factor, int32_t policy,
                     int64_t group_tokens, const int64_t *indices,
                     const float *weights, int64_t *kept_indices,
                     float *kept_weights, int64_t *counts);

/* loss[0] = scale / 2 * sum over the n floats of (in - target)^2 (double,
 * in order) and grad = scale * (in - target). */
void muirrt_mse_loss(int64_t n, const float *in, const float *target,
                     float scale, float *loss, float *grad);

/* Gradient of muirrt_route's weights with respect to the logits, in double,
 * for the routing `indices` it chose (its own, before muirrt_capacity's
 * drops; a -1 ends the run): dlogits [tokens, experts] from
 * dweights [tokens, k]. The bias and expert groups only select, so they
 * have no gradient; logits no slot depends on get zero (sigmoid,
 * softmax_after_topk). */
void muirrt_route_grad(int64_t tokens, int64_t experts, int64_t k,
                       const float *logits, int32_t scoring,
                       int32_t softmax_after_topk, int32_t normalize,
                       float scaling, const int64_t *indices,
                       const float *dweights, float *dlogits);

/* Expert dispatch over the group of `axes_mask` (expert parallelism: the
 * `experts` experts split evenly, expert e on group rank e / (experts /
 * g)). This rank's `tokens` rows of x [tokens, hidden] and their routing
 * indices [tokens, k] (-1: a dropped slot) go to the ranks holding their
 * experts:
 *   1. the pairs per expert and tokens per rank of every rank are gathered
 *      (muirrt_all_gather_i64 of experts + g int64), so every rank checks
 *      every rank's receive bound (`bound` rows) and all stop together,
 *      with a message naming `layer`, the rank and the rows per expert;
 *   2. a token travels once to each rank holding any of its experts (one
 *      muirrt_all_to_allv_bytes; a row is its hidden floats, k int32 local
 *      expert ids and, with weights, its k weights);
 *   3. the receiver expands it into one row per (token, slot) in
 *      expert-major order (local expert, source rank, source token), rows
 *      past the total zero; with weights each row is weight * x.
 * counts [experts / g] gets the rows per local expert; plan [2 bound + 4 g]
 * what combine needs: per row its received token and its position in the
 * (source, token, slot) order, then per rank tokens received, pairs
 * received, tokens sent, pairs sent. */
void muirrt_moe_dispatch(int64_t axes_mask, int64_t tokens, int64_t k,
                         int64_t experts, int64_t hidden, const float *x,
                         const int64_t *indices, const float *weights,
                         int64_t bound, float *out, int64_t *counts,
                         int64_t *plan, const char *layer);

/* The transpose of dispatch: every expert-major row of `rows` [bound,
 * hidden] goes back to its token's rank (one muirrt_all_to_allv_bytes),
 * where out[t] = sum over the slots j in order of weights[t][j] * row(t, j)
 * (weights NULL: 1), in double. The same operations for any g, so results
 * are bitwise independent of the number of ranks. */
void muirrt_moe_combine(int64_t axes_mask, int64_t tokens, int64_t k,
                        int64_t experts, int64_t hidden, const float *rows,
                        int64_t bound, const int64_t *indices,
                        const int64_t *plan, const float *weights, float *out,
                        const char *layer);

/* Gradient of combine's weights: dweights[t][j] = <grad[t], row(t, j)>.
 * grad travels as dispatch's tokens did, the dot products (double) are
 * formed where the rows are and come back as one float per pair (two
 * muirrt_all_to_allv_bytes); dropped slots get 0. */
void muirrt_moe_combine_weights_grad(int64_t axes_mask, int64_t tokens,
                                     int64_t k, int64_t experts,
                                     int64_t hidden, const float *grad,
                                     const float *rows, int64_t bound,
                                     const int64_t *indices,
                                     const int64_t *plan, float *dweights,
                                     const char *layer);

/* out[i] = in[i] / (||in[i]||_F + eps) for each of `batch` items of `numel`
 * floats. The norm is accumulated in double in a fixed order, so results do
 * not depend on thread count. in == out is allowed. */
void muirrt_frobenius_normalize(int64_t batch, int64_t numel, float eps,
                                const float *in, float *out);

/* The same for doubles (an f64 parameter's Newton-Schulz): the norm summed
 * in a fixed order, eps in double, one reciprocal, then a multiply. */
void muirrt_frobenius_normalize_f64(int64_t batch, int64_t numel, double eps,
                                    const double *in, double *out);

/* ss[i] = sum of squares of the numel floats of item i, accumulated in
 * double in a fixed order and rounded to float. */
void muirrt_sum_squares(int64_t batch, int64_t numel, const float *in,
                        float *ss);

/* out[i] = in[i] / (sqrt(ss[i]) + eps), with muirrt_frobenius_normalize's
 * arithmetic (one double reciprocal, then a float multiply). */
void muirrt_scale_by_norm(int64_t batch, int64_t numel, float eps,
                          const float *in, const float *ss, float *out);

/* out[i] = in[i]^T; in[i] is rows x cols, out[i] is cols x rows. */
void muirrt_transpose(int64_t batch, int64_t rows, int64_t cols,
                      const float *in, float *out);

/* Copies numel floats into observation slot `slot` (grown on demand). The
 * host reads them after a step with muirrt_observation(). */
void muirrt_observe(int64_t slot, const float *data, int64_t numel);

/*===------------------------- observations -------------------------------===*/

/* The last data observed in `slot`, or NULL if none; *numel receives its
 * length. Valid until the next muirrt_observe on that slot. */
const float *muirrt_observation(int64_t slot, int64_t *numel);

/* Clears every observation slot. */
void muirrt_observations_clear(void);

/*===--------------------------- counters ---------------------------------===*/

typedef struct MuirRtCounters {
  int64_t gemm_calls;  /* muirrt_sgemm invocations (a batch counts once) */
  int64_t syrk_calls;  /* muirrt_ssyrk invocations */
  int64_t other_calls; /* normalize, transpose */
  double flops;        /* floating-point operations actually performed by
                          GEMM (2mnk per item) and SYRK (n(n+1)k per item) */
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

/* For every registered tensor, reads DIR/<name>.npy if it exists (a name
 * with '/' maps to subfolders) and marks the tensor loaded. Fails, naming
 * the file, on an unreadable file, a malformed header, a dtype other than
 * the tensor's (little-endian float32 '<f4' or float64 '<f8'), Fortran
 * order, or a shape that differs from the registered one. A missing DIR is an error. *loaded receives the count. */
int muirrt_load_dir(MuirRtContext *ctx, const char *dir, int32_t *loaded);

/* Checks that DIR exists or can be created and that a file can be written
 * in it, leaving nothing behind; call before running so that an unwritable
 * directory fails before any work. */
int muirrt_check_dump_dir(const char *dir);

/* Whether muirrt_dump_dir could write tensors named `names` to DIR,
 * changing nothing: DIR is a writable directory, or absent with a writable
 * directory above it; no folder on the way to a file (tensor names with
 * '/') is a symbolic link or a file; every DIR/<name>.npy is absent or a
 * regular file. Call before running, so that a dump that would fail costs
 * nothing. */
int muirrt_check_dump(const char *dir, const char *const *names,
                      int32_t count);

/* Writes every tensor to DIR/<name>.npy (creating DIR and subfolders),
 * all or nothing: every target is checked first (as muirrt_check_dump;
 * symbolic links inside DIR are never followed); the new dump is built in
 * a staging directory beside DIR (muirrt_stage_dir), with DIR's other
 * files carried over as hard links, which then takes DIR's place in one
 * rename (muirrt_stage_commit). DIR is at every moment the old dump whole
 * or the new one whole, also when a signal stops the process; on a failure
 * the staging directory and the folders this call created are removed. */
int muirrt_dump_dir(const MuirRtContext *ctx, const char *dir);

/* Writes every tensor to DIR/<name>.npy in DIR, an existing directory that
 * holds none of them (a staging directory); subfolders are created. */
int muirrt_write_dir(const MuirRtContext *ctx, const char *dir);

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
int muirrt_cleanup_register(const char *path);
void muirrt_cleanup_unregister(const char *path);
void muirrt_cleanup_now(void);

/* Single-file helpers (also used by the tests). npy_read allocates *data
 * with malloc (caller frees) and reports rank and shape (up to 8 dims). */
int muirrt_npy_read(const char *path, float **data, int32_t *rank,
                    int64_t shape[8]);
int muirrt_npy_write_atomic(const char *path, const float *data, int32_t rank,
                            const int64_t *shape);

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
int64_t muirrt_dist_group_rank(int64_t axes_mask);
void muirrt_dist_barrier(void);
/* The lowest world rank whose `mine` is non-zero, or -1 if none (every
 * rank calls it; a control exchange, not counted by muirrt_comm_*). */
int32_t muirrt_dist_first(int32_t mine);
void muirrt_dist_finalize(void);

/* A deterministic all_reduce of count floats over g ranks scatters slices
 * and gathers the rank-order sums (a ring's bytes) when this holds; else
 * every rank gathers every piece. The plan report counts bytes by it. */
#define MUIR_RT_SCATTER_MIN_PER_MEMBER 256
static inline int muirrt_all_reduce_scatters(int64_t count, int64_t g) {
  return g >= 3 && count >= MUIR_RT_SCATTER_MIN_PER_MEMBER * g &&
         count <= INT32_MAX;
}

/* Floats of rows [r0, r1) of an n x n upper triangle, each row from its
 * diagonal on (n - r floats for row r): one packed chunk of the fused
 * Gram all-reduce. */
static inline int64_t muirrt_triangle_rows_floats(int64_t n, int64_t r0,
                                                  int64_t r1) {
  return (r1 - r0) * n - (r1 * (r1 - 1) - r0 * (r0 - 1)) / 2;
}

/* Reductions: 0 sum, 1 max, 2 min, 3 avg. Sums are reduced in group-rank
 * order, independent of timing, so results are reproducible. */
void muirrt_all_reduce(int64_t axes_mask, int32_t op, const float *in,
                       float *out, int64_t count);

/* The group's sum of `batch` symmetric n x n double matrices: only packed
 * upper triangles travel (n (n + 1) / 2 doubles each, to every peer), the
 * sum runs in group-rank order, both triangles of `out` are written
 * (muir.symmetric_all_reduce). */
void muirrt_symmetric_all_reduce(int64_t axes_mask, const double *in,
                                 double *out, int64_t batch, int64_t n);

/* Gathers along one dimension of row-major tensors: `in` is
 * [outer, inner] (the tensor seen as `outer` rows of `inner` contiguous
 * floats up to the gathered dimension), `out` is [outer, inner * g] with the
 * group's pieces in group-rank order inside each row. outer = 1 gathers
 * along dimension 0. */
void muirrt_all_gather(int64_t axes_mask, const float *in, float *out,
                       int64_t outer, int64_t inner);

/* Ragged gather along dimension 0: group rank j contributes counts[j]
 * floats (its first counts[j] of `in`); out holds them back to back in
 * group-rank order. */
void muirrt_all_gatherv(int64_t axes_mask, const float *in, float *out,
                        const int64_t *counts);

/* Reduce, then group rank j keeps slice j of `outer` rows x `inner * g`
 * floats: in is [outer, inner * g], out is [outer, inner]. */
void muirrt_reduce_scatter(int64_t axes_mask, int32_t op, const float *in,
                           float *out, int64_t outer, int64_t inner);

/* Each rank sends block j (count floats, blocks back to back) to group
 * rank j and receives block i from group rank i into out. */
void muirrt_all_to_all(int64_t axes_mask, const float *in, float *out,
                       int64_t count);

/* Ragged all-to-all of rows of `row` floats: send_counts[j] rows (back to
 * back from the start of `in`, which holds in_rows rows) go to group rank
 * j. out receives the rows packed from row 0 in group-rank order and
 * recv_counts[j] the number from group rank j; more than out_rows rows in
 * all is a loud error (static bounds that were too small). */
void muirrt_all_to_allv(int64_t axes_mask, const float *in, int64_t in_rows,
                        const int64_t *send_counts, float *out,
                        int64_t out_rows, int64_t *recv_counts, int64_t row);

/*===----------------------- fingerprint tracing -------------------------===*/

/* One buffer of one executed op (muir_exec.trace): the step, the op's
 * execution number in the step (seq), its id, the operand index, whether
 * it was written (after the op) or read (before), its size and a 64-bit
 * FNV-1a hash of its bytes. */
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
void muirrt_trace_buffer(int64_t op_id, int64_t index, int32_t output,
                         void *data, int64_t bytes);
int64_t muirrt_trace_count(void);
const MuirRtTraceRecord *muirrt_trace_records(void);

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

/* The group's sum of a SYRK's upper triangle, in chunks of rows, so that a
 * chunk's exchange hides behind the next chunk's product:
 *   muirrt_ssyrk_rows(rows j); r_j = muirrt_triangle_all_reduce_start(rows
 *   j); muirrt_ssyrk_rows(rows j + 1); ...; muirrt_triangle_all_reduce_wait(
 *   r_j, c); ...
 * Only rows [row_begin, row_end) of the upper triangles (row r from its
 * diagonal on, n - r floats) of the `batch` n x n items of c travel,
 * packed; start begins a non-blocking gather (MPI_Iallgather) and returns
 * a request; wait completes it, adds the pieces in group-rank order (as
 * muirrt_all_reduce) and writes the sums to those rows and, mirrored, to
 * the matching lower-triangle columns. Every request must be waited for
 * exactly once, with its own rows (the wait's row_begin and row_end must be
 * the start's). */
int64_t muirrt_triangle_all_reduce_start(int64_t axes_mask, int64_t batch,
                                         int64_t n, const float *c,
                                         int64_t row_begin, int64_t row_end);
void muirrt_triangle_all_reduce_wait(int64_t request, float *c,
                                     int64_t row_begin, int64_t row_end);

/* Group rank `root`'s buffer is copied to every rank of the group. */
void muirrt_broadcast(int64_t axes_mask, int64_t root, float *buf,
                      int64_t count);

/* No communication: `in` is [outer, inner * g] (the same on every rank of
 * the group); out receives group rank r's block [outer, inner]. */
void muirrt_all_slice(int64_t axes_mask, const float *in, float *out,
                      int64_t outer, int64_t inner);

/* Bytes this rank sent and collective calls it made on the group named by
 * axes_mask, since the last reset. */
int64_t muirrt_comm_bytes(int64_t axes_mask);
int64_t muirrt_comm_calls(int64_t axes_mask);
void muirrt_comm_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* MUIR_RT_RUNTIME_H */
