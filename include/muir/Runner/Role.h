//===- Role.h - what an argument of a compiled step is ---------*- C++ -*-===//
//
// The runner's roles of a step's arguments. The tensor roles are the
// runtime's (MUIRRT_ROLE_*: how it seeds a tensor nobody loads); the C
// API's MuirArgumentRole (muir/Step.h) is the public spelling of these
// values, checked where it translates them (lib/CAPI/Step.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_RUNNER_ROLE_H
#define MUIR_RUNNER_ROLE_H

#include "muir-rt/Runtime.h"

#include <cstdint>

namespace mlir::muir::runner {

enum Role : int32_t {
  RoleParam = MUIRRT_ROLE_PARAM, ///< a parameter, updated in place
  RoleGrad = MUIRRT_ROLE_GRAD,   ///< its gradient
  RoleState = MUIRRT_ROLE_STATE, ///< optimizer state
  RoleData = MUIRRT_ROLE_DATA,   ///< an input: training data, max_logits
  RoleCounter = RoleData + 1,    ///< the 1-based step counter (int64)
  RoleHyper = RoleData + 2,      ///< a run-time hyperparameter (f64)
};

/// Tensors (bound, loaded, dumped) rather than scalars.
inline bool isTensorRole(int32_t role) {
  return role >= RoleParam && role <= RoleData;
}

} // namespace mlir::muir::runner

#endif // MUIR_RUNNER_ROLE_H
