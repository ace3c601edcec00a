//===- Staging.cpp - outputs staged beside their destination --------------===//
//
// Everything muir writes that takes more than one rename (a dump or a
// state directory, a cached step's object and library) is first built
// under a staging name beside its destination, on the same file system,
// and put in place by one rename: a directory that exists is swapped with
// its staging directory (renameat2 RENAME_EXCHANGE), so that the
// destination is at every moment the old directory whole or the new one
// whole. Staging paths are registered here; SIGINT, SIGTERM and SIGHUP
// (and muirrt_cleanup_now, which a rank calls when its launcher died)
// remove every registered path before the signal takes its course, so a
// killed run leaves no sibling behind. The handler uses only system calls
// (openat, getdents64, unlinkat, rename): it may interrupt anything.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/Runtime.h"

#include "HostInternal.h"

#include <cerrno>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

using namespace muirrt_host;

namespace {

/// A path to clean up: removed (a file, or a directory and everything in
/// it), or, for a directory moved aside by the fallback of a file system
/// without RENAME_EXCHANGE, moved back to `restore` if nothing is there.
struct Slot {
  /// Set (release) once path and restore are written; read (acquire) by
  /// the handler on any thread.
  std::atomic<int> used{0};
  /// The process that registered it: a forked child (a data loader's
  /// worker) inherits the table but must not remove its parent's paths.
  pid_t owner = 0;
  char path[PATH_MAX];
  char restore[PATH_MAX];
};
constexpr int kSlots = 64;
Slot slots[kSlots];
struct sigaction previous[NSIG];
std::atomic<bool> installed{false};
std::mutex installing;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

/// Blocks the cleanup signals while the registry changes.
struct Blocked {
  sigset_t old;
  Blocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals)
      sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old);
  }
  ~Blocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

/// Removes `name` under `parentFd`: a file, or a directory with everything
/// in it (links are removed, never followed). System calls only.
void removeTreeAt(int parentFd, const char *name, int depth) {
  if (::unlinkat(parentFd, name, 0) == 0 || errno == ENOENT)
    return;
  if (depth > 64)
    return;
  int fd = ::openat(parentFd, name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  alignas(8) char buf[2048];
  while (true) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    for (long at = 0; at < n;) {
      auto *d = reinterpret_cast<Dirent64 *>(buf + at);
      at += d->reclen;
      if (d->name[0] == '.' &&
          (d->name[1] == 0 || (d->name[1] == '.' && d->name[2] == 0)))
        continue;
      removeTreeAt(fd, d->name, depth + 1);
    }
  }
  ::close(fd);
  ::unlinkat(parentFd, name, AT_REMOVEDIR);
}

void cleanSlot(Slot &s) {
  if (!s.used.load(std::memory_order_acquire) || s.owner != ::getpid())
    return;
  struct stat st;
  if (s.restore[0] && ::lstat(s.restore, &st) != 0 && errno == ENOENT &&
      ::rename(s.path, s.restore) == 0) {
    s.used.store(0, std::memory_order_release);
    return;
  }
  removeTreeAt(AT_FDCWD, s.path, 0);
  s.used.store(0, std::memory_order_release);
}

void cleanAll() {
  for (Slot &s : slots)
    cleanSlot(s);
}

void onSignal(int sig, siginfo_t *info, void *context) {
  int savedErrno = errno;
  cleanAll();
  const struct sigaction &old = previous[sig];
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction)
      old.sa_sigaction(sig, info, context);
  } else if (old.sa_handler == SIG_DFL) {
    // The signal's own action (termination), as if no handler were here.
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
  } else if (old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
  }
  errno = savedErrno;
}

void install() {
  if (installed.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> lock(installing);
  if (installed.load(std::memory_order_relaxed))
    return;
  struct sigaction action = {};
  action.sa_sigaction = onSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int s : kSignals)
    sigaddset(&action.sa_mask, s);
  for (int s : kSignals) {
    // A signal the process ignores (nohup, a background job's SIGINT)
    // stays ignored: it must not end the staging of a run that goes on.
    struct sigaction current;
    ::sigaction(s, nullptr, &current);
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN)
      continue;
    ::sigaction(s, &action, &previous[s]);
  }
  installed.store(true, std::memory_order_release);
}

/// The absolute form of `path` (relative to the working directory now).
std::string absolute(const std::string &path) {
  if (!path.empty() && path[0] == '/')
    return path;
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof(cwd)))
    return path;
  return joinPath(cwd, path);
}

int registerPath(const std::string &path, const std::string &restore) {
  std::string abs = absolute(path), back = restore.empty() ? "" : absolute(restore);
  if (abs.size() >= PATH_MAX || back.size() >= PATH_MAX)
    return fail("'" + path + "': path too long to stage");
  Blocked blocked;
  install();
  static std::mutex registering;
  std::lock_guard<std::mutex> lock(registering);
  for (Slot &s : slots)
    if (!s.used.load(std::memory_order_acquire) || s.owner != ::getpid()) {
      s.owner = ::getpid();
      std::memcpy(s.path, abs.c_str(), abs.size() + 1);
      std::memcpy(s.restore, back.c_str(), back.size() + 1);
      s.used.store(1, std::memory_order_release);
      return 0;
    }
  return fail("too many outputs staged at once (" + std::to_string(kSlots) +
              ")");
}

void unregisterPath(const std::string &path) {
  std::string abs = absolute(path);
  Blocked blocked;
  for (Slot &s : slots)
    if (s.used.load(std::memory_order_acquire) && s.owner == ::getpid() &&
        abs == s.path) {
      s.used.store(0, std::memory_order_release);
      return;
    }
}

/// `path` without trailing slashes, "." and ".." resolved lexically.
std::string parentOf(const std::string &path, std::string &base) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.find_last_of('/');
  base = slash == std::string::npos ? p : p.substr(slash + 1);
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

bool alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

/// Staging siblings of `base` in `parent` left by a process that no longer
/// runs (killed with SIGKILL): removed, as that process would have.
void removeStale(const std::string &parent, const std::string &base) {
  DIR *d = ::opendir(parent.c_str());
  if (!d)
    return;
  std::string prefix = "." + base + ".muir-staging-";
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || alive(pid))
      continue;
    // An old directory moved aside by the fallback commit, whose process
    // died before the new one took its place: it goes back.
    std::string stale = joinPath(parent, name), target = joinPath(parent, base);
    struct stat st;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".old") == 0 &&
        ::lstat(target.c_str(), &st) != 0 && errno == ENOENT &&
        ::rename(stale.c_str(), target.c_str()) == 0)
      continue;
    removeTreeAt(AT_FDCWD, stale.c_str(), 0);
  }
  ::closedir(d);
}

} // namespace

extern "C" int muirrt_cleanup_register(const char *path) {
  return guarded([&]() -> int {
    if (!path || !*path)
      return fail("muirrt_cleanup_register: empty path");
    return registerPath(path, "");
  });
}

extern "C" void muirrt_cleanup_unregister(const char *path) {
  if (path && *path)
    unregisterPath(path);
}

extern "C" void muirrt_cleanup_now(void) {
  Blocked blocked;
  cleanAll();
}

extern "C" void muirrt_stage_sweep(const char *dir) {
  if (!dir || !*dir)
    return;
  std::string given = dir;
  struct stat st;
  char real[PATH_MAX];
  if (::lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) && ::realpath(dir, real))
    given = real;
  std::string base, parent = parentOf(given, base);
  if (base.empty() || base == "." || base == ".." || base == "/")
    return;
  removeStale(parent, base);
}

extern "C" int muirrt_stage_dir(const char *dir, char *out, size_t size) {
  return guarded([&]() -> int {
    if (!dir || !*dir || !out || size == 0)
      return fail("muirrt_stage_dir: empty argument");
    // A link to a directory: staged beside the directory it names, which
    // muirrt_stage_commit replaces (on that directory's file system).
    std::string given = dir;
    struct stat st;
    char real[PATH_MAX];
    if (::lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) &&
        ::realpath(dir, real))
      given = real;
    std::string base, parent = parentOf(given, base);
    if (base.empty() || base == "." || base == ".." || base == "/")
      return fail(std::string("'") + dir +
                  "': give the directory by its name (not '.', '..' or '/')");
    if (int rc = makeDirs(parent))
      return rc;
    removeStale(parent, base);
    // The name is registered before the directory is made: a signal on
    // any thread (the handler may run on a BLAS thread) finds it
    // registered from the moment it exists.
    std::string prefix = joinPath(parent, "." + base + ".muir-staging-" +
                                              std::to_string(::getpid()) + "-");
    static std::atomic<uint64_t> counter{0};
    std::string staged;
    for (int attempt = 0;; ++attempt) {
      if (attempt == 100)
        return fail("cannot find a free staging name beside '" +
                    std::string(dir) + "' in '" + parent + "'");
      staged = prefix + std::to_string(counter++) + "." +
               std::to_string(static_cast<unsigned>(::random() % 1000000));
      if (int rc = registerPath(staged, ""))
        return rc;
      if (::mkdir(staged.c_str(), 0777) == 0)
        break;
      int err = errno;
      unregisterPath(staged);
      if (err != EEXIST)
        return fail("cannot create a staging directory beside '" +
                    std::string(dir) + "' in '" + parent +
                    "': " + errnoText(err));
    }
    if (staged.size() + 1 > size) {
      muirrt_stage_abort(staged.c_str());
      return fail("muirrt_stage_dir: output buffer too small");
    }
    std::memcpy(out, staged.c_str(), staged.size() + 1);
    return 0;
  });
}

extern "C" void muirrt_stage_abort(const char *staged) {
  if (!staged || !*staged)
    return;
  removeTreeAt(AT_FDCWD, staged, 0);
  unregisterPath(staged);
}

extern "C" int muirrt_stage_commit(const char *staged, const char *dir) {
  return guarded([&]() -> int {
    if (!staged || !*staged || !dir || !*dir)
      return fail("muirrt_stage_commit: empty argument");
    std::string target = dir;
    while (target.size() > 1 && target.back() == '/')
      target.pop_back();
    // A link to a directory: the directory it names is replaced, the link
    // stays.
    struct stat st;
    if (::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      char real[PATH_MAX];
      if (!::realpath(target.c_str(), real))
        return fail("'" + target + "': " + errnoText(errno));
      target = real;
    }
    if (::lstat(target.c_str(), &st) != 0) {
      if (errno != ENOENT)
        return fail("'" + target + "': " + errnoText(errno));
      // Nothing there: the staging directory takes its name.
      if (::rename(staged, target.c_str()) != 0)
        return fail("cannot put '" + target + "' in place: " +
                    errnoText(errno));
      unregisterPath(staged);
      return 0;
    }
    if (!S_ISDIR(st.st_mode))
      return fail("'" + target + "' is not a directory");
    // The old directory and the new one swap names in one step; the old
    // one, now under the staging name, goes.
    if (::syscall(SYS_renameat2, AT_FDCWD, staged, AT_FDCWD, target.c_str(),
                  RENAME_EXCHANGE) == 0) {
      // A file that cannot be removed (permissions) is left; the
      // destination is already whole.
      muirrt_stage_abort(staged);
      return 0;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      return fail("cannot put '" + target + "' in place: " + errnoText(errno));
    // A file system without RENAME_EXCHANGE: the old directory moves aside
    // (a signal now moves it back), the new one in, then the old one goes.
    std::string aside = std::string(staged) + ".old";
    if (int rc = registerPath(aside, target))
      return rc;
    if (::rename(target.c_str(), aside.c_str()) != 0) {
      unregisterPath(aside);
      return fail("cannot move '" + target + "' aside: " + errnoText(errno));
    }
    if (::rename(staged, target.c_str()) != 0) {
      int err = errno;
      ::rename(aside.c_str(), target.c_str());
      unregisterPath(aside);
      return fail("cannot put '" + target + "' in place: " + errnoText(err));
    }
    unregisterPath(staged);
    removeTreeAt(AT_FDCWD, aside.c_str(), 0);
    unregisterPath(aside);
    return 0;
  });
}
