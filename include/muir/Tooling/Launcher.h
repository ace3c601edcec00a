//===- Launcher.h - a tool's ranks under mpirun -----------------*- C++ -*-===//
//
// `--ranks N`: a tool starts itself again under mpirun, forwards signals
// and filters mpirun's banners; the ranks watch their launcher; the fault
// tests' injection; the heap's huge pages.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_TOOLING_LAUNCHER_H
#define MUIR_TOOLING_LAUNCHER_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::muir::tooling {

/// glibc's malloc backs its heap with transparent huge pages only when
/// GLIBC_TUNABLES says so as the process starts (glibc.malloc.hugetlb=1,
/// glibc 2.35 and later): a step's first touch of its tensors and
/// temporaries then faults once per 2 MiB instead of once per 4 KiB.
/// Restarts this process in place (execve of /proc/self/exe, the same pid
/// and arguments) with the tunable added, unless MUIR_HUGEPAGES=0, the
/// tunable is set already, or the kernel's transparent huge pages are off;
/// returns when it does not restart. Call first thing in main.
void restartWithHugePages(char **argv);

/// Starts `argv` again as `mpirun -n ranks argv...`, forwarding SIGINT,
/// SIGTERM and SIGHUP (and killing what is left 5 s later), passing the
/// ranks' stderr through without mpirun's banners that only repeat a
/// rank's non-zero exit. Returns the exit status for the launcher.
int relaunchUnderMPI(int ranks, int argc, char **argv, llvm::StringRef tool);
/// In a rank started by relaunchUnderMPI (MUIR_LAUNCHER_PID set): a thread
/// that ends this rank, removing what it staged, as soon as the launcher
/// ends, however it ends (SIGKILL too). Elsewhere nothing.
void watchLauncher();

/// Test-only fault injection for the fault tests: MUIR_TEST_FAULT =
/// "kill:R:S" makes rank R die (SIGKILL) before step S, "hang:R:S" makes it
/// stop taking part (sleep) there.
void testFault(int64_t rank, int64_t step);
/// The step number testFault is called with while a state is saved, once
/// the staging directory exists ("kill:0:-1": rank 0 dies there).
inline constexpr int64_t kSavingFaultStep = -1;

} // namespace mlir::muir::tooling

#endif // MUIR_TOOLING_LAUNCHER_H
