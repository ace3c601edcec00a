/*===- muir-rt/Collectives.h - what collectives agree on --------*- C -*-===*
 *
 * The facts about a collective that the CPU runtime, the CUDA runtime and
 * the compiler's cost walk (lib/Analysis/StepCost.cpp, the plan report)
 * must agree on, written once:
 *  - the reduction codes a collective takes (the compiler passes them for
 *    muir_exec's #reduction attribute), and one step of a rank-order
 *    reduction (both runtimes reduce a group's pieces with it, the CPU in
 *    its loops, the CUDA runtime in its kernel);
 *  - a rank's place in a grid and in the group of an axes mask;
 *  - the bytes a rank sends in one call of each collective, as the
 *    runtimes' counters count them (a fixed function of the arguments,
 *    not of MPI's or NCCL's algorithm) and as the plan report predicts
 *    them. A group of one sends nothing.
 * Plain C, static inline: no runtime needs to be linked to use it.
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_COLLECTIVES_H
#define MUIR_RT_COLLECTIVES_H

#include "muir-rt/GroupMask.h"

#include <stdint.h>

/*===------------------------- reductions ---------------------------------===*/

/* The element-wise reduction of all_reduce and reduce_scatter. */
enum muirrt_reduction {
  MUIRRT_REDUCE_SUM = 0,
  MUIRRT_REDUCE_MAX = 1,
  MUIRRT_REDUCE_MIN = 2,
  MUIRRT_REDUCE_AVG = 3
};

/* Host and device code (nvcc compiles it into the CUDA runtime's kernels). */
#ifdef __CUDACC__
#define MUIRRT_HOST_DEVICE __host__ __device__
#else
#define MUIRRT_HOST_DEVICE
#endif

/* acc op v, one step of reducing a group's pieces in group-rank order
 * (acc holds pieces 0..j-1, v is piece j): sum and avg add; max and min
 * keep the first NaN they meet and, on ties, the earlier piece. */
static inline MUIRRT_HOST_DEVICE float muirrt_reduce_step(int32_t op,
                                                          float acc,
                                                          float v) {
  if (op == MUIRRT_REDUCE_SUM || op == MUIRRT_REDUCE_AVG)
    return acc + v;
  int v_nan = v != v, acc_nan = acc != acc;
  int take = op == MUIRRT_REDUCE_MAX ? (v > acc || v_nan) : (v < acc || v_nan);
  return take && !acc_nan ? v : acc;
}

/* The reduced value of g pieces: avg divides the sum by g. */
static inline MUIRRT_HOST_DEVICE float muirrt_reduce_finish(int32_t op,
                                                            float acc,
                                                            int64_t g) {
  return op == MUIRRT_REDUCE_AVG ? acc / (float)g : acc;
}

/*===------------------------- places -------------------------------------===*/

/* The coordinates of world rank `rank` in a row-major grid of `num_axes`
 * axes of sizes `sizes` (the last axis varies fastest). */
static inline void muirrt_grid_coords(int32_t num_axes, const int64_t *sizes,
                                      int64_t rank, int64_t *coords) {
  for (int32_t i = num_axes; i-- > 0;) {
    coords[i] = rank % sizes[i];
    rank /= sizes[i];
  }
}

/* The group of the axes `axis_bits` (bit i: axis i) that holds the rank at
 * `coords`: the ranks that agree with it on every other axis. `size` is
 * the product of the mask's axis sizes, `rank` the row-major index of its
 * coordinates over the mask's axes (the group rank), `color` the
 * row-major index over the other axes (which group of the mask it is). */
typedef struct muirrt_group_place {
  int64_t size;
  int64_t rank;
  int64_t color;
} muirrt_group_place;

static inline muirrt_group_place
muirrt_group_place_of(int32_t num_axes, const int64_t *sizes,
                      const int64_t *coords, int64_t axis_bits) {
  muirrt_group_place p = {1, 0, 0};
  for (int32_t i = 0; i < num_axes; ++i) {
    if ((axis_bits >> i) & 1) {
      p.size *= sizes[i];
      p.rank = p.rank * sizes[i] + coords[i];
    } else {
      p.color = p.color * sizes[i] + coords[i];
    }
  }
  return p;
}

/*===------------------------- bytes sent ---------------------------------===*/

/* `bytes` to each of the g - 1 peers (saturating at INT64_MAX). */
static inline int64_t muirrt_sent_to_peers(int64_t bytes, int64_t g) {
  if (g <= 1 || bytes <= 0)
    return 0;
  __int128 all = (__int128)bytes * (g - 1);
  return all > INT64_MAX ? INT64_MAX : (int64_t)all;
}

/* `count` elements of `width` bytes to each of the g - 1 peers. */
static inline int64_t muirrt_sent_elements(int64_t count, int64_t width,
                                           int64_t g) {
  __int128 bytes = (__int128)count * width;
  return muirrt_sent_to_peers(bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes,
                              g);
}

/* A deterministic all_reduce of count floats over g ranks scatters slices
 * and gathers the rank-order sums (a ring's bytes) when this holds; else
 * every rank gathers every piece. */
#define MUIR_RT_SCATTER_MIN_PER_MEMBER 256
static inline int muirrt_all_reduce_scatters(int64_t count, int64_t g) {
  return g >= 3 && count >= MUIR_RT_SCATTER_MIN_PER_MEMBER * g &&
         count <= INT32_MAX;
}

/* all_reduce of count floats, group rank r of g: its whole piece to every
 * peer, or, when it scatters (muirrt_all_reduce_scatters), all but its
 * slice (floor(count (r + 1) / g) - floor(count r / g) floats) out and its
 * reduced slice to every peer: about 8 (g - 1) / g bytes a float. */
static inline int64_t muirrt_sent_all_reduce(int64_t count, int64_t g,
                                             int64_t r) {
  if (g <= 1)
    return 0;
  if (!muirrt_all_reduce_scatters(count, g))
    return muirrt_sent_elements(count, 4, g);
  int64_t mine = (int64_t)((__int128)count * (r + 1) / g) -
                 (int64_t)((__int128)count * r / g);
  return 4 * (count - mine) + muirrt_sent_elements(mine, 4, g);
}

/* symmetric_all_reduce of `batch` n x n double matrices: the packed upper
 * triangles (n (n + 1) / 2 doubles each) to every peer. */
static inline int64_t muirrt_sent_symmetric_all_reduce(int64_t batch,
                                                       int64_t n, int64_t g) {
  return muirrt_sent_elements(batch * (n * (n + 1) / 2), 8, g);
}

/* Floats of rows [r0, r1) of an n x n upper triangle, each row from its
 * diagonal on (n - r floats for row r): one packed chunk of the fused
 * Gram all-reduce. */
static inline int64_t muirrt_triangle_rows_floats(int64_t n, int64_t r0,
                                                  int64_t r1) {
  return (r1 - r0) * n - (r1 * (r1 - 1) - r0 * (r0 - 1)) / 2;
}

/* triangle_all_reduce_start (one call a chunk): the chunk's floats of the
 * packed triangle of each of `batch` matrices to every peer; over all
 * chunks batch n (n + 1) / 2 floats. */
static inline int64_t muirrt_sent_triangle_rows(int64_t batch, int64_t n,
                                                int64_t r0, int64_t r1,
                                                int64_t g) {
  return muirrt_sent_elements(batch * muirrt_triangle_rows_floats(n, r0, r1),
                              4, g);
}

/* all_gather, all_gatherv, all_to_all, reduce_scatter and the CUDA
 * runtime's packed exchange: `floats` of this rank's (its piece, its
 * counts[me], one block, one slice) to each peer. */
static inline int64_t muirrt_sent_blocks(int64_t floats, int64_t g) {
  return muirrt_sent_elements(floats, 4, g);
}

/* all_to_allv (and all_to_allv_bytes): the rows for the g - 1 others
 * (`rows_to_others` rows of `row_bytes` bytes), and one int64 count to each
 * peer when `with_counts` (0: the counts are known already). */
static inline int64_t muirrt_sent_all_to_allv(int64_t rows_to_others,
                                              int64_t row_bytes, int64_t g,
                                              int with_counts) {
  if (g <= 1)
    return 0;
  __int128 bytes = (__int128)rows_to_others * row_bytes;
  if (with_counts)
    bytes += (__int128)8 * (g - 1);
  return bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
}

/* broadcast of count floats: the root's buffer to each peer; 0 elsewhere. */
static inline int64_t muirrt_sent_broadcast(int64_t count, int64_t g,
                                            int is_root) {
  return is_root ? muirrt_sent_elements(count, 4, g) : 0;
}

#endif /* MUIR_RT_COLLECTIVES_H */
