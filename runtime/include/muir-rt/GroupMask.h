/*===- muir-rt/GroupMask.h - how the runtimes name a group ------*- C -*-===*
 *
 * Both runtimes' collectives name their group as an int64 mask: bit i for
 * axis i of a folding of the ranks (the grid of muirrt_dist_init is folding
 * 0; muirrt_dist_add_folding numbers the others from 1), and the folding's
 * index in bits 48-62. The compiler (muir::getRuntimeAxesMask), the step
 * library and both runtimes make and read masks through these functions
 * only.
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_GROUPMASK_H
#define MUIR_RT_GROUPMASK_H

#include <stdint.h>

/* Axes of a folding: at most this many; the folding index starts here. */
#define MUIRRT_FOLDING_SHIFT 48

/* The mask of the axes `axis_bits` (bit i: axis i) of folding `folding`. */
static inline int64_t muirrt_group_mask(int64_t folding, int64_t axis_bits) {
  return (folding << MUIRRT_FOLDING_SHIFT) | axis_bits;
}

/* The folding a mask names (0: the grid). */
static inline int64_t muirrt_mask_folding(int64_t mask) {
  return mask >> MUIRRT_FOLDING_SHIFT;
}

/* The axis bits of a mask. */
static inline int64_t muirrt_mask_axes(int64_t mask) {
  return mask & ((INT64_C(1) << MUIRRT_FOLDING_SHIFT) - 1);
}

#endif /* MUIR_RT_GROUPMASK_H */
