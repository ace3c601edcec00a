/*===- muir-rt/Shapes.h - shape checks both runtimes make --------*- C -*-===*
 *
 * The checks the CPU runtime (Runtime.h) and the CUDA runtime
 * (CudaRuntime.h) make alike on the host before they work, written once.
 *===----------------------------------------------------------------------===*/
#ifndef MUIR_RT_SHAPES_H
#define MUIR_RT_SHAPES_H

#include <stdint.h>

/* NULL when a routing of `tokens` tokens over `experts` experts, top
 * `k`, in n_group groups of which topk_group are kept, has a shape both
 * runtimes can route; else what is wrong with it (muirrt_route and
 * muirrt_cuda_route refuse it, naming the values). */
static inline const char *muirrt_route_shape_error(int64_t tokens,
                                                   int64_t experts, int64_t k,
                                                   int64_t n_group,
                                                   int64_t topk_group) {
  if (tokens < 0 || experts < 1)
    return "tokens and experts must be >= 0 and >= 1";
  if (k < 1 || k > experts)
    return "top_k out of [1, experts]";
  if (n_group < 1 || experts % n_group != 0 || topk_group < 1 ||
      topk_group > n_group || k > topk_group * (experts / n_group))
    return "bad expert groups (n_group, topk_group)";
  return 0;
}

#endif /* MUIR_RT_SHAPES_H */
