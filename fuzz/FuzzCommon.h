//===- FuzzCommon.h - shared setup of muir's libFuzzer targets --*- C++ -*-===//
//
// The MLIR context the fuzz targets build and verify IR in: created once per
// process (a context per input would cost more than the input), with every
// dialect muir's tools read, one thread, and diagnostics swallowed (an input
// that is rejected with a diagnostic is a success for the fuzzer; only a
// crash, a sanitizer report or a failed consistency check is a finding).
//
// The dialects are those of mlir::muir::registerMuirDialects (every upstream
// dialect and extension plus muir and muir_exec), registered here directly:
// that function lives in MuirDriver, which would pull every pass into the
// sanitizer build that CI compiles.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_FUZZ_FUZZCOMMON_H
#define MUIR_FUZZ_FUZZCOMMON_H

#include "Muir/MuirDialect.h"
#include "MuirExec/MuirExecDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

/// ASan's defaults for these targets, also when run by hand: LLVM's
/// BumpPtrAllocator poisons its slabs when compiled with ASan (muir's code)
/// but not in libMLIR.so, and both allocate from the same MLIRContext, so
/// libMLIR's allocations would read as poisoned. scripts/muir.sh sets the
/// same for every sanitized run. (Defined here, not inline: each fuzz
/// target is one source file that includes this header.)
extern "C" __attribute__((used)) const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace muir_fuzz {

inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    registry
        .insert<mlir::muir::MuirDialect, mlir::muir_exec::MuirExecDialect>();
    auto *c =
        new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) { return mlir::success(); });
    return c;
  }();
  return *ctx;
}

/// A consistency check failed: an input the reader accepted broke a later
/// stage. Reported like a crash so that libFuzzer keeps the input.
[[noreturn]] inline void bug(const llvm::Twine &what) {
  llvm::errs() << "muir fuzz: " << what << "\n";
  std::abort();
}

/// From now on the context's diagnostics are printed (the newest handler
/// runs first): called on the way to a bug() to show what went wrong.
inline void showDiagnostics() {
  context().getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    llvm::errs() << diag << "\n";
    return mlir::success();
  });
}

/// Verifies `op`; on failure prints the verifier's diagnostics and reports
/// `what` as a bug.
inline void verifyOrBug(mlir::Operation *op, const llvm::Twine &what) {
  if (mlir::succeeded(mlir::verify(op)))
    return;
  showDiagnostics();
  (void)mlir::verify(op);
  bug(what);
}

} // namespace muir_fuzz

#endif // MUIR_FUZZ_FUZZCOMMON_H
