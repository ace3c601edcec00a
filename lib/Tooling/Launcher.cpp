//===- Launcher.cpp - a tool's ranks under mpirun -------------------------===//
//
// `--ranks N`: the tool starts itself again under mpirun, forwards signals,
// and filters mpirun's banners from the ranks' stderr.
//
//===----------------------------------------------------------------------===//
#include "muir/Tooling/Launcher.h"
#include "muir/Runner/Step.h"
#include "muir-rt/Runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using llvm::StringRef;
using llvm::SmallVector;
using llvm::Twine;

/// Starts this very command line again as `mpirun -n N muir-run ...`; each
/// rank then sees OMPI_COMM_WORLD_SIZE and runs its part. OpenBLAS threads
/// are divided among the ranks unless the environment sets them.
///
/// SIGINT, SIGTERM and SIGHUP are passed on to mpirun, which ends its
/// ranks; if it has not ended within kStopSeconds, its ranks and it are
/// killed, so that no process of the run outlives muir-run by more.
///
/// mpirun's own banners (framed by lines of dashes on its stderr) would
/// bury the ranks' messages: they are dropped, except that a rank ended by
/// a signal is named in one line.
static volatile sig_atomic_t launchedPid = 0;
static volatile sig_atomic_t stopSignal = 0;

static void forwardSignal(int sig) {
  stopSignal = sig;
  if (launchedPid > 0)
    ::kill(static_cast<pid_t>(launchedPid), sig);
}

/// Kills `parent`'s children (mpirun's ranks have process groups of
/// their own), then `parent`.
static void killTree(pid_t parent) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it("/proc", ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    pid_t pid = 0;
    if (name.getAsInteger(10, pid))
      continue;
    // /proc files report size 0: read them as a stream.
    std::ifstream in(it->path() + "/stat");
    std::string line;
    if (!std::getline(in, line))
      continue;
    // "pid (comm) state ppid ...": the command may hold spaces.
    StringRef text = line;
    SmallVector<StringRef> fields;
    text.drop_front(text.rfind(')') + 1).split(fields, ' ', -1, false);
    pid_t ppid = 0;
    if (fields.size() > 1 && !fields[1].getAsInteger(10, ppid) &&
        ppid == parent)
      ::kill(pid, SIGKILL);
  }
  ::kill(parent, SIGKILL);
}

namespace {
/// Passes mpirun's stderr through, line by line, without the banners
/// (framed by lines of dashes) that only repeat what a rank said: that a
/// rank exited non-zero, which its own message explains. A rank ended by a
/// signal is named in one line; any other banner (mpirun's own trouble)
/// passes through whole.
class StderrFilter {
public:
  explicit StderrFilter(StringRef tool) : tool(tool) {}
  void feed(StringRef chunk) {
    pending += chunk.str();
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      line(StringRef(pending).take_front(nl));
      pending.erase(0, nl + 1);
    }
  }
  void finish() {
    if (!pending.empty())
      line(pending);
    pending.clear();
    if (inBanner)
      endBanner();
    inBanner = false;
  }

private:
  void line(StringRef text) {
    if (text.size() >= 10 && text.find_first_not_of('-') == StringRef::npos) {
      if (inBanner)
        endBanner();
      inBanner = !inBanner;
      return;
    }
    if (inBanner) {
      banner += text.str() + "\n";
      return;
    }
    llvm::errs() << text << "\n";
    llvm::errs().flush();
  }
  void endBanner() {
    // "mpirun noticed that process rank 1 with PID 0 on node x exited on
    // signal 9 (Killed)."
    StringRef b = banner;
    size_t at = b.find("process rank ");
    size_t sig = b.find("exited on signal ");
    if (at != StringRef::npos && sig != StringRef::npos) {
      StringRef rank = b.substr(at + 13).take_while(llvm::isDigit);
      StringRef what = b.substr(sig + 17).take_until(
          [](char c) { return c == '.' || c == '\n'; });
      llvm::WithColor::error(llvm::errs(), tool)
          << "rank " << rank << " ended on signal " << what.rtrim() << "\n";
    } else if (!b.contains("Primary job  terminated normally") &&
               !b.contains("exited with non-zero status")) {
      std::string dashes(74, '-');
      llvm::errs() << dashes << "\n" << b << dashes << "\n";
    }
    llvm::errs().flush();
    banner.clear();
  }

  std::string pending, banner;
  bool inBanner = false;
  StringRef tool;
};
} // namespace

/// This machine's boot id (/proc/sys/kernel/random/boot_id), which tells
/// one machine from another; empty if unknown.
static std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return StringRef(id).trim().str();
}

void mlir::muir::tooling::restartWithHugePages(char **argv) {
  const char *off = getenv("MUIR_HUGEPAGES");
  if (off && StringRef(off) == "0")
    return;
  const char *tunables = getenv("GLIBC_TUNABLES");
  if (tunables && StringRef(tunables).contains("glibc.malloc.hugetlb"))
    return;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  if (!std::getline(thp, modes) || modes.find("[never]") != std::string::npos)
    return;
  std::string old = tunables ? tunables : "";
  std::string value =
      old + (old.empty() ? "" : ":") + "glibc.malloc.hugetlb=1";
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0)
    ::execv("/proc/self/exe", argv);
  // Not restarted (no /proc): run as started.
  if (tunables)
    ::setenv("GLIBC_TUNABLES", old.c_str(), 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
}

/// The ranks' shared-memory segments in a folder of this launch's, which
/// the launcher removes when mpirun has ended, however the ranks ended
/// (a rank killed mid-run leaves its segment behind otherwise).
/// Those of launchers that died (SIGKILL) before removing theirs go first.
/// Returns the folder ("" when none could be made).
static std::string makeShmFolder(pid_t launcher) {
  {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it("/dev/shm", ec), end;
         it != end && !ec; it.increment(ec)) {
      StringRef name = llvm::sys::path::filename(it->path());
      long long pid = 0;
      if (name.consume_front("muir-mpi-") && !name.consumeInteger(10, pid) &&
          pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 &&
          errno == ESRCH)
        llvm::sys::fs::remove_directories(it->path());
    }
  }
  std::string shm = "/dev/shm/muir-mpi-" + std::to_string(launcher) + "-XXXXXX";
  if (!::mkdtemp(shm.data()))
    shm.clear();
  return shm;
}

/// mpirun's command line: `numRanks` ranks of `self` with the tool's own
/// arguments, oversubscribed and unbound, the BLAS threads and the
/// launcher's watch in their environment, the shared-memory folder `shm`
/// (none when empty), run as root where that is so.
static std::vector<std::string>
mpirunCommand(const std::string &mpirun, int numRanks, unsigned cores,
              const std::string &threads, const std::string &watch,
              const std::string &shm, const std::string &self, int argc,
              char **argv) {
  std::string ranks = std::to_string(numRanks);
  std::vector<std::string> cmd = {mpirun,      "-n",   ranks, "--oversubscribe",
                                  "--bind-to", "none", "-x",  threads,
                                  "-x",        watch};
  if (!shm.empty())
    for (const std::string &arg :
         {std::string("--mca"), std::string("btl_vader_backing_directory"),
          shm})
      cmd.push_back(arg);
  if (geteuid() == 0)
    cmd.push_back("--allow-run-as-root");
  // More ranks than cores: a rank that waits in MPI yields its core instead
  // of spinning on it (tiny-moe on 4 ranks of a 2-core machine: 6.4-6.9 s
  // spinning, 5.4-5.9 s yielding; on 2 ranks spinning is faster).
  // OMPI_MCA_mpi_yield_when_idle, if set, decides.
  if (static_cast<unsigned>(numRanks) > cores &&
      !getenv("OMPI_MCA_mpi_yield_when_idle"))
    for (const char *arg : {"--mca", "mpi_yield_when_idle", "1"})
      cmd.push_back(arg);
  cmd.push_back(self);
  for (int i = 1; i < argc; ++i)
    cmd.push_back(argv[i]);
  return cmd;
}

/// Waits for mpirun (`pid`) to end, into `status`, copying the ranks'
/// output meanwhile (`drain`, which polls for up to its argument in
/// milliseconds); once a stop signal came, kills mpirun's tree if it has
/// not ended within `stopSeconds`. False when waiting failed (errno).
static bool waitForMpirun(pid_t pid, int &status, int stopSeconds,
                          llvm::function_ref<bool(int)> drain) {
  auto stopAt = std::chrono::steady_clock::time_point::max();
  while (true) {
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid)
      return true;
    if (got < 0 && errno != EINTR)
      return false;
    if (stopSignal && stopAt == std::chrono::steady_clock::time_point::max())
      stopAt =
          std::chrono::steady_clock::now() + std::chrono::seconds(stopSeconds);
    if (std::chrono::steady_clock::now() > stopAt) {
      killTree(pid);
      ::waitpid(pid, &status, 0);
      return true;
    }
    drain(50);
  }
}

int mlir::muir::tooling::relaunchUnderMPI(int numRanks, int argc, char **argv,
                                          StringRef tool) {
  auto fail = [&](const Twine &msg) {
    llvm::WithColor::error(llvm::errs(), tool) << msg << "\n";
    return 1;
  };
  constexpr int kStopSeconds = 5;
  auto mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("--ranks " + Twine(numRanks) +
                " needs mpirun (Debian: openmpi-bin)");
  std::string self = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&killTree));
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string threads =
      "OPENBLAS_NUM_THREADS=" +
      std::string(getenv("OPENBLAS_NUM_THREADS")
                      ? getenv("OPENBLAS_NUM_THREADS")
                      : std::to_string(std::max(1u, cores / numRanks)));
  // The ranks watch this process (watchLauncher): killed even with
  // SIGKILL, it leaves no rank running.
  pid_t launcher = ::getpid();
  std::string watch =
      "MUIR_LAUNCHER_PID=" + std::to_string(launcher) + "@" + bootId();
  std::string shm = makeShmFolder(launcher);
  auto removeShm = [&] {
    if (!shm.empty())
      llvm::sys::fs::remove_directories(shm);
  };
  std::vector<std::string> cmd = mpirunCommand(
      *mpirun, numRanks, cores, threads, watch, shm, self, argc, argv);
  std::vector<char *> cargv;
  for (std::string &a : cmd)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);

  struct sigaction action = {};
  action.sa_handler = forwardSignal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &action, nullptr);
  // mpirun's stdout is a pipe the launcher copies to its own: a reader
  // that closes early (`| head`) ends the run here, quietly, instead of
  // mpirun aborting on SIGPIPE with a banner and killed ranks.
  int errPipe[2], outPipe[2];
  if (::pipe2(errPipe, O_CLOEXEC) != 0 || ::pipe2(outPipe, O_CLOEXEC) != 0) {
    removeShm();
    return fail("cannot run mpirun: " + Twine(std::strerror(errno)));
  }
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction pipeAction;
  ::sigaction(SIGPIPE, &ignore, &pipeAction);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0)
    return fail("cannot run mpirun: " + Twine(std::strerror(errno)));
  if (pid == 0) {
    // mpirun ends with this process, however it ends (mpirun then ends
    // its ranks; they also watch this process themselves).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher)
      std::_Exit(1);
    ::sigaction(SIGPIPE, &pipeAction, nullptr);
    ::dup2(errPipe[1], STDERR_FILENO);
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "%s: error: cannot run %s: %s\n", tool.str().c_str(),
                 cargv[0], std::strerror(errno));
    std::_Exit(127);
  }
  launchedPid = pid;
  ::close(errPipe[1]);
  ::close(outPipe[1]);
  StderrFilter filter(tool);
  // Set once stdout's reader has gone: the run is stopped (SIGTERM to
  // mpirun, as for the user's SIGTERM), its output dropped.
  bool stdoutClosed = false;
  bool outOpen = true;
  auto copyOut = [&](const char *data, size_t n) {
    while (n > 0 && !stdoutClosed) {
      ssize_t w = ::write(STDOUT_FILENO, data, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0) {
        stdoutClosed = true;
        if (!stopSignal) {
          stopSignal = SIGPIPE;
          ::kill(pid, SIGTERM);
        }
        return;
      }
      data += w;
      n -= w;
    }
  };
  auto drain = [&](int timeoutMs) {
    struct pollfd pfds[2] = {{errPipe[0], POLLIN, 0},
                             {outOpen ? outPipe[0] : -1, POLLIN, 0}};
    if (::poll(pfds, 2, timeoutMs) <= 0)
      return false;
    char buf[4096];
    bool got = false;
    if (pfds[1].revents) {
      ssize_t n = ::read(outPipe[0], buf, sizeof(buf));
      if (n > 0)
        copyOut(buf, n);
      else
        outOpen = false;
      got |= n > 0;
    }
    if (pfds[0].revents) {
      ssize_t n = ::read(errPipe[0], buf, sizeof(buf));
      // After stdout closed, mpirun's and the ranks' words on the stop
      // are noise: the user ended the output.
      if (n > 0 && !stdoutClosed)
        filter.feed(StringRef(buf, n));
      got |= n > 0;
    }
    return got;
  };
  int status = 0;
  if (!waitForMpirun(pid, status, kStopSeconds, drain))
    return fail("waiting for mpirun: " + Twine(std::strerror(errno)));
  // What the ranks wrote last (the pipes close when the last one ends).
  while (drain(stopSignal ? 100 : 1000))
    ;
  filter.finish();
  ::close(errPipe[0]);
  ::close(outPipe[0]);
  removeShm();
  ::sigaction(SIGPIPE, &pipeAction, nullptr);
  if (stopSignal)
    return 128 + stopSignal;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void mlir::muir::tooling::watchLauncher() {
  // "PID@BOOT": the launcher's pid, and the boot id of its machine; a rank
  // on another machine (mpirun over several hosts), or one that cannot
  // see the launcher's pid (another pid namespace), does not watch.
  const char *given = getenv("MUIR_LAUNCHER_PID");
  if (!given)
    return;
  auto [pidText, boot] = StringRef(given).split('@');
  pid_t launcher = 0;
  if (pidText.getAsInteger(10, launcher) || launcher <= 1 || boot.empty() ||
      boot != bootId())
    return;
  // A pidfd becomes readable when the process ends; without one (an old
  // kernel), the launcher is looked for four times a second.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, launcher, 0));
  if (fd < 0 && ::kill(launcher, 0) != 0 && errno == ESRCH)
    return; // not visible from here: nothing to watch
  std::thread([fd, launcher] {
    if (fd >= 0) {
      struct pollfd pfd = {fd, POLLIN, 0};
      while (::poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    } else {
      while (::kill(launcher, 0) == 0 || errno == EPERM)
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    // The launcher is gone: what this rank staged goes, then the rank.
    const char msg[] = "muir-run: the launcher of this rank ended; the rank "
                       "stops (what it staged is removed)\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    muirrt_cleanup_now();
    std::_Exit(128 + SIGKILL);
  }).detach();
}

/// Test-only fault injection for the fault tests: MUIR_TEST_FAULT =
/// "kill:R:S" makes rank R die (SIGKILL) before step S, "hang:R:S" makes it
/// stop taking part (sleep) there.
void mlir::muir::tooling::testFault(int64_t rank, int64_t step) {
  const char *spec = getenv("MUIR_TEST_FAULT");
  if (!spec)
    return;
  SmallVector<StringRef> parts;
  StringRef(spec).split(parts, ':');
  int64_t r = -1, s = -1;
  if (parts.size() != 3 || parts[1].getAsInteger(10, r) ||
      parts[2].getAsInteger(10, s) || r != rank || s != step)
    return;
  if (parts[0] == "kill")
    ::raise(SIGKILL);
  if (parts[0] == "hang")
    for (;;)
      ::sleep(1000);
}

