//===- TensorFiles.cpp - a context's tensors in files ---------------------===//
//
// What a tool needs to hold a step's tensors in files (muir-run, the GPU
// machine's step runner; not the step library, whose callers bind their
// own memory): loading and dumping whole directories of .npy files, a
// rank's part of one, the checks before a dump, and single .npy files (the
// format itself is Npy.cpp). The library MuirTensorFiles; see
// muir-rt/TensorFiles.h for the contract.
//
// Nothing here throws across the C API: every entry point either cannot
// throw or catches and turns the exception into an error return.
//
//===----------------------------------------------------------------------===//

#include "muir-rt/TensorFiles.h"

#include "HostInternal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <set>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

// The .npy payload is little-endian float32 and is read and written with a

namespace [[gnu::visibility("hidden")]] muirrt_host {

//===----------------------------------------------------------------------===//
// File helpers
//===----------------------------------------------------------------------===//

// Calls read(p, n, done) for the bytes from `done` on until `size` bytes
// or end of file; returns the count read, or -1 with errno set.
template <typename Read>
ssize_t readAll(void *buf, size_t size, Read read) {
  size_t done = 0;
  char *p = static_cast<char *>(buf);
  while (done < size) {
    ssize_t r = read(p + done, size - done, done);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0)
      break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

// read() until `size` bytes or end of file; returns the count read, or -1
// with errno set.
ssize_t readFull(int fd, void *buf, size_t size) {
  return readAll(buf, size, [&](char *p, size_t n, size_t) {
    return ::read(fd, p, n);
  });
}

// pread() from `at` on, the same way.
ssize_t preadFull(int fd, void *buf, size_t size, off_t at) {
  return readAll(buf, size, [&](char *p, size_t n, size_t done) {
    return ::pread(fd, p, n, at + static_cast<off_t>(done));
  });
}

bool writeFull(int fd, const void *buf, size_t size) {
  const char *p = static_cast<const char *>(buf);
  while (size > 0) {
    ssize_t w = ::write(fd, p, size);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += w;
    size -= static_cast<size_t>(w);
  }
  return true;
}

// Tensor names become relative file paths; refuse anything that could land
// outside DIR or collide with the directory structure.
int checkFileName(const std::string &name) {
  bool ok = !name.empty() && name.front() != '/';
  size_t pos = 0;
  while (ok && pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string::npos)
      slash = name.size();
    std::string part = name.substr(pos, slash - pos);
    if (part.empty() || part == "." || part == "..")
      ok = false;
    pos = slash + 1;
  }
  if (!ok)
    return fail("tensor name '" + name +
                "' cannot be used as a relative file path");
  return 0;
}

// What lies at `path`, not following a symbolic link there.
Entry entryAt(const std::string &path, int &err) {
  struct stat st;
  err = 0;
  if (::lstat(path.c_str(), &st) != 0) {
    err = errno;
    return Entry::None;
  }
  if (S_ISLNK(st.st_mode))
    return Entry::Link;
  if (S_ISDIR(st.st_mode))
    return Entry::Directory;
  return S_ISREG(st.st_mode) ? Entry::File : Entry::Other;
}

// Checks that DIR/<name>.npy can take a new file without following a link
// out of DIR or replacing anything but a regular file: each folder on the
// way (tensor names with '/') is absent or a real directory, the file is
// absent or a regular file. Folders that would be created are appended to
// `missing` (outermost first).
int checkDumpTarget(const std::string &base, const std::string &name,
                    std::vector<std::string> *missing) {
  if (int rc = checkFileName(name))
    return rc;
  int err = 0;
  size_t slash = 0;
  bool creating = false;
  while ((slash = name.find('/', slash)) != std::string::npos) {
    std::string dir = joinPath(base, name.substr(0, slash++));
    if (creating) {
      if (missing)
        missing->push_back(dir);
      continue;
    }
    switch (entryAt(dir, err)) {
    case Entry::Directory:
      continue;
    case Entry::None:
      if (err != ENOENT)
        return fail(dir + ": cannot stat: " + errnoText(err));
      creating = true;
      if (missing)
        missing->push_back(dir);
      continue;
    case Entry::Link:
      return fail(dir + ": is a symbolic link; muir does not follow links "
                        "inside the dump directory");
    default:
      return fail(dir + ": exists and is not a directory");
    }
  }
  if (creating)
    return 0;
  std::string path = joinPath(base, name + ".npy");
  switch (entryAt(path, err)) {
  case Entry::None:
    return err == ENOENT ? 0 : fail(path + ": cannot stat: " + errnoText(err));
  case Entry::File:
    return 0;
  case Entry::Directory:
    return fail(path + ": is a directory; muir replaces only a regular file");
  case Entry::Link:
    return fail(path + ": is a symbolic link; muir replaces only a regular "
                       "file");
  default:
    return fail(path + ": is not a regular file; muir replaces only a "
                       "regular file");
  }
}

// A name beside `path` for a temporary or a kept previous file: the pid and
// a counter of this process, so that names never repeat within a process;
// a leftover of another process that had the same pid is skipped by the
// callers, which create these files exclusively and try the next name.
std::string sideName(const std::string &path, const char *what) {
  static std::atomic<uint64_t> counter{0};
  return path + "." + what + "." +
         std::to_string(static_cast<long long>(::getpid())) + "." +
         std::to_string(counter++);
}

std::string tempPathFor(const std::string &path) {
  return sideName(path, "tmp");
}


} // namespace muirrt_host

using namespace muirrt_host;

//===----------------------------------------------------------------------===//
// Directories
//===----------------------------------------------------------------------===//

namespace {
/// muirrt_load_dir, and with `globalShapes` (per tensor: null, or the
/// whole tensor's shape of which it is the part at offsets[i])
/// muirrt_load_dir_parts.
int loadDir(MuirRtContext *ctx, const char *dir,
            const int64_t *const *globalShapes, const int64_t *const *offsets,
            int32_t *loaded) {
  if (loaded)
    *loaded = 0;
  return guarded([&]() -> int {
    if (!ctx)
      return fail("muirrt_load_dir: null context");
    if (!dir || !*dir)
      return fail("muirrt_load_dir: empty directory path");
    std::string base = dir;
    DIR *d = ::opendir(dir);
    if (!d)
      return fail("cannot open directory '" + base + "': " + errnoText(errno));
    ::closedir(d);
    auto wholeShape = [&](size_t i) {
      return globalShapes && globalShapes[i] ? globalShapes[i]
                                             : ctx->tensors[i].shape;
    };

    // Pass 1 validates every file present before any tensor is touched, so
    // a bad file anywhere leaves the context as it was (barring I/O errors
    // in pass 2).
    std::vector<std::pair<size_t, std::string>> found;
    for (size_t i = 0; i < ctx->tensors.size(); ++i) {
      const Tensor &t = ctx->tensors[i];
      if (int rc = checkFileName(t.name))
        return rc;
      std::string path = joinPath(base, t.name + ".npy");
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
          continue; // not provided: the tensor keeps its seeded value
        return fail(path + ": cannot stat: " + errnoText(errno));
      }
      if (!S_ISREG(st.st_mode))
        return fail(path + ": not a regular file");
      int fd;
      if (int rc = openForRead(path, fd))
        return rc;
      FdCloser closer{fd};
      NpyHeader h;
      if (int rc = readNpyHeader(fd, path, h))
        return rc;
      const int64_t *want = wholeShape(i);
      bool same = h.rank == t.rank;
      for (int32_t k = 0; same && k < t.rank; ++k)
        same = h.shape[k] == want[k];
      if (!same)
        return fail(path + ": expected shape " + shapeString(t.rank, want) +
                    ", found " + shapeString(h.rank, h.shape));
      if (h.elementSize != t.elementSize())
        return fail(path + ": expected dtype " + npyDescr(t.elementSize()) +
                    " for tensor '" + t.name + "', found " +
                    npyDescr(h.elementSize));
      found.emplace_back(i, path);
    }

    // Pass 2 reads the data straight into the tensors' storage (a part:
    // its rows only). Headers are re-validated since files are not kept
    // open between passes.
    for (const auto &entry : found) {
      Tensor &t = ctx->tensors[entry.first];
      const std::string &path = entry.second;
      int fd;
      if (int rc = openForRead(path, fd))
        return rc;
      FdCloser closer{fd};
      NpyHeader h;
      if (int rc = readNpyHeader(fd, path, h))
        return rc;
      const int64_t *want = wholeShape(entry.first);
      int64_t numel = 1;
      for (int32_t k = 0; k < t.rank; ++k)
        numel *= want[k];
      if (h.numel != numel || h.elementSize != t.elementSize())
        return fail(path + ": file changed while loading");
      if (want == t.shape) {
        if (int rc = readNpyData(fd, path, h, t.data.get()))
          return rc;
      } else {
        int rc = 0;
        char *dst = static_cast<char *>(t.data.get());
        const int64_t es = t.elementSize();
        forEachRun(t.rank, want, offsets[entry.first], t.shape,
                   [&](int64_t whole, int64_t part, int64_t count) {
                     if (rc)
                       return;
                     size_t bytes = static_cast<size_t>(count * es);
                     off_t at = static_cast<off_t>(h.dataOffset) +
                                static_cast<off_t>(whole * es);
                     ssize_t got = preadFull(fd, dst + part * es, bytes, at);
                     if (got < 0)
                       rc = fail(path + ": read error: " + errnoText(errno));
                     else if (static_cast<size_t>(got) != bytes)
                       rc = fail(path + ": truncated data");
                   });
        if (rc)
          return rc;
      }
      t.loaded = true;
    }
    if (loaded)
      *loaded = static_cast<int32_t>(found.size());
    return 0;
  });
}
} // namespace

extern "C" int muirrt_load_dir(MuirRtContext *ctx, const char *dir,
                               int32_t *loaded) {
  return loadDir(ctx, dir, nullptr, nullptr, loaded);
}

extern "C" int muirrt_load_dir_parts(MuirRtContext *ctx, const char *dir,
                                     const int64_t *const *global_shapes,
                                     const int64_t *const *offsets,
                                     int32_t *loaded) {
  if (global_shapes && !offsets) {
    if (loaded)
      *loaded = 0;
    return fail("muirrt_load_dir_parts: global shapes without offsets");
  }
  return loadDir(ctx, dir, global_shapes, offsets, loaded);
}

extern "C" int muirrt_npy_create(const char *dir, const char *name,
                                 int32_t dtype, int32_t rank,
                                 const int64_t *shape) {
  return guarded([&]() -> int {
    if (!dir || !*dir || !name)
      return fail("muirrt_npy_create: empty directory path or name");
    if (dtype != MUIRRT_DTYPE_F32 && dtype != MUIRRT_DTYPE_F64)
      return fail("muirrt_npy_create: invalid dtype " + std::to_string(dtype));
    std::string n = name, base = dir;
    if (int rc = checkFileName(n))
      return rc;
    size_t slash = 0;
    while ((slash = n.find('/', slash)) != std::string::npos) {
      std::string d = joinPath(base, n.substr(0, slash++));
      if (::mkdir(d.c_str(), 0777) != 0 && errno != EEXIST)
        return fail("cannot create directory '" + d + "': " + errnoText(errno));
    }
    std::string path = joinPath(base, n + ".npy");
    return writeNpyFile(path, nullptr, dtype == MUIRRT_DTYPE_F64 ? 8 : 4,
                        rank, shape);
  });
}

extern "C" int muirrt_npy_write_part(const MuirRtContext *ctx, int32_t index,
                                     const char *dir,
                                     const int64_t *global_shape,
                                     const int64_t *offset) {
  return guarded([&]() -> int {
    const Tensor *t = getTensor(ctx, index);
    if (!t || !dir || !*dir || !global_shape || !offset)
      return fail("muirrt_npy_write_part: bad arguments");
    std::string path = joinPath(dir, t->name + ".npy");
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
      return fail(path + ": cannot open: " + errnoText(errno));
    FdCloser closer{fd};
    NpyHeader h;
    if (int rc = readNpyHeader(fd, path, h))
      return rc;
    bool same = h.rank == t->rank && h.elementSize == t->elementSize();
    for (int32_t k = 0; same && k < t->rank; ++k)
      same = h.shape[k] == global_shape[k];
    if (!same)
      return fail(path + ": expected shape " +
                  shapeString(t->rank, global_shape) + " of " +
                  npyDescr(t->elementSize()) + ", found " +
                  shapeString(h.rank, h.shape) + " of " +
                  npyDescr(h.elementSize));
    const char *src = static_cast<const char *>(t->data.get());
    const int64_t es = t->elementSize();
    int rc = 0;
    forEachRun(t->rank, global_shape, offset, t->shape,
               [&](int64_t whole, int64_t part, int64_t count) {
                 if (rc)
                   return;
                 off_t at = static_cast<off_t>(h.dataOffset) +
                            static_cast<off_t>(whole * es);
                 size_t bytes = static_cast<size_t>(count * es);
                 const char *p = src + part * es;
                 while (bytes > 0) {
                   ssize_t w = ::pwrite(fd, p, bytes, at);
                   if (w < 0 && errno == EINTR)
                     continue;
                   if (w <= 0) {
                     rc = fail(path + ": write error: " + errnoText(errno));
                     return;
                   }
                   p += w;
                   at += w;
                   bytes -= static_cast<size_t>(w);
                 }
               });
    if (rc)
      return rc;
    closer.fd = -1;
    if (::close(fd) != 0)
      return fail(path + ": write error: " + errnoText(errno));
    return 0;
  });
}

extern "C" int muirrt_check_dump_dir(const char *dir) {
  return guarded([&]() -> int {
    if (!dir || !*dir)
      return fail("muirrt_check_dump_dir: empty directory path");
    std::string base = dir;
    if (int rc = makeDirs(base))
      return rc;
    std::string probe =
        joinPath(base, ".muirrt-probe." +
                           std::to_string(static_cast<long long>(::getpid())));
    int fd =
        ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail("cannot write in directory '" + base +
                  "': " + errnoText(errno));
    ::close(fd);
    if (::unlink(probe.c_str()) != 0)
      return fail("cannot remove probe file '" + probe +
                  "': " + errnoText(errno));
    return 0;
  });
}

namespace {
int carryOver(const std::string &from, const std::string &to,
              const std::string &rel, const std::set<std::string> &replaced,
              int depth);
bool isMountPoint(const std::string &dir);
} // namespace

extern "C" int muirrt_check_dump(const char *dir, const char *const *names,
                                 int32_t count) {
  return guarded([&]() -> int {
    if (!dir || !*dir)
      return fail("muirrt_check_dump: empty directory path");
    std::string base = dir;
    // A link to a directory: the dump replaces the directory it names,
    // staged beside it (muirrt_stage_dir), so that is what is checked.
    struct stat lst;
    char real[PATH_MAX];
    if (::lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode) &&
        ::realpath(dir, real))
      base = real;
    // The new dump is staged beside DIR: DIR's folder, or the nearest
    // folder above it that exists, must take writes.
    std::string trimmed = base;
    while (trimmed.size() > 1 && trimmed.back() == '/')
      trimmed.pop_back();
    size_t cut = trimmed.find_last_of('/');
    std::string last =
        cut == std::string::npos ? trimmed : trimmed.substr(cut + 1);
    if (last.empty() || last == "." || last == ".." || trimmed == "/")
      return fail("'" + base + "': give the dump's directory by its name "
                  "(not '.', '..' or '/')");
    std::string existing = cut == std::string::npos ? "."
                           : cut == 0               ? "/"
                                                    : trimmed.substr(0, cut);
    int err = 0;
    while (true) {
      struct stat st;
      if (::stat(existing.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
          return fail("cannot write in directory '" + existing +
                      "': " + errnoText(ENOTDIR));
        break;
      }
      err = errno;
      if (err != ENOENT)
        return fail("'" + existing + "': " + errnoText(err));
      size_t slash = existing.find_last_of('/');
      existing = slash == std::string::npos ? "."
                 : slash == 0               ? "/"
                                            : existing.substr(0, slash);
    }
    if (::access(existing.c_str(), W_OK | X_OK) != 0)
      return fail("cannot write in directory '" + existing +
                  "': " + errnoText(errno));
    struct stat dst;
    if (::stat(base.c_str(), &dst) != 0)
      return 0; // DIR will be new: nothing in it can be in the way
    if (!S_ISDIR(dst.st_mode))
      return fail("cannot write in directory '" + base +
                  "': " + errnoText(ENOTDIR));
    std::set<std::string> replaced;
    for (int32_t i = 0; i < count; ++i) {
      if (int rc = checkDumpTarget(base, names[i] ? names[i] : "", nullptr))
        return rc;
      replaced.insert(std::string(names[i] ? names[i] : "") + ".npy");
    }
    // What the dump carries over from the old directory must be carriable
    // (checked now, not after the run).
    if (!isMountPoint(base))
      if (int rc = carryOver(base, "", "", replaced, 0))
        return rc;
    return 0;
  });
}

namespace {

/// Copies a regular file (a hard link where the file system has none).
int copyFile(const std::string &from, const std::string &to, mode_t mode) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return fail("cannot read '" + from + "': " + errnoText(errno));
  FdCloser closeIn{in};
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (out < 0)
    return fail("cannot create '" + to + "': " + errnoText(errno));
  FdCloser closeOut{out};
  char buf[1 << 16];
  while (true) {
    ssize_t n = readFull(in, buf, sizeof(buf));
    if (n < 0)
      return fail("cannot read '" + from + "': " + errnoText(errno));
    if (n == 0)
      return 0;
    if (!writeFull(out, buf, static_cast<size_t>(n)))
      return fail("cannot write '" + to + "': " + errnoText(errno));
  }
}

/// Carries every entry of the old dump directory `from` that the new dump
/// does not replace (`replaced`: paths relative to the dump directory) into
/// the staging directory `to`: files as hard links (so they stay the same
/// files), folders recreated, links recreated as links.
int carryOver(const std::string &from, const std::string &to,
              const std::string &rel, const std::set<std::string> &replaced,
              int depth) {
  // With `to` empty, only checks that everything can be carried over.
  bool dry = to.empty();
  if (depth > 64)
    return fail("'" + from + "': folders nested too deeply");
  DIR *d = ::opendir(from.c_str());
  if (!d)
    return fail("cannot read directory '" + from + "': " + errnoText(errno));
  struct Closer {
    DIR *d;
    ~Closer() { ::closedir(d); }
  } closer{d};
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    std::string path = joinPath(from, name), dest = joinPath(to, name),
                relName = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0)
      return fail("'" + path + "': " + errnoText(errno));
    if (dry)
      dest.clear();
    if (S_ISDIR(st.st_mode)) {
      if (!dry && ::mkdir(dest.c_str(), st.st_mode & 07777) != 0 &&
          errno != EEXIST)
        return fail("cannot create '" + dest + "': " + errnoText(errno));
      if (int rc = carryOver(path, dest, relName, replaced, depth + 1))
        return rc;
    } else if (S_ISREG(st.st_mode)) {
      if (replaced.count(relName) || dry)
        continue;
      if (::link(path.c_str(), dest.c_str()) != 0)
        if (int rc = copyFile(path, dest, st.st_mode & 07777))
          return rc;
    } else if (S_ISLNK(st.st_mode)) {
      if (dry)
        continue;
      std::string target(PATH_MAX, '\0');
      ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
      if (n < 0)
        return fail("cannot read link '" + path + "': " + errnoText(errno));
      target.resize(static_cast<size_t>(n));
      if (::symlink(target.c_str(), dest.c_str()) != 0)
        return fail("cannot create link '" + dest + "': " + errnoText(errno));
    } else {
      return fail("--dump: '" + path + "' is not a file, a folder or a link; "
                  "muir cannot carry it into the new dump (move it "
                  "elsewhere)");
    }
  }
  return 0;
}

/// Writes every tensor to DIR/<name>.npy in a directory that holds none of
/// them (a staging directory), creating subfolders.
int writeTensors(const MuirRtContext *ctx, const std::string &base) {
  for (const Tensor &t : ctx->tensors) {
    if (int rc = checkFileName(t.name))
      return rc;
    size_t slash = 0;
    while ((slash = t.name.find('/', slash)) != std::string::npos) {
      std::string d = joinPath(base, t.name.substr(0, slash++));
      if (::mkdir(d.c_str(), 0777) != 0 && errno != EEXIST)
        return fail("cannot create directory '" + d + "': " + errnoText(errno));
    }
    std::string path = joinPath(base, t.name + ".npy");
    // The carried-over tree may hold a stale file by this name only if it
    // was not replaced, which the check excludes.
    if (int rc = writeNpyFile(path, t.data.get(), t.elementSize(), t.rank,
                              t.shape))
      return rc;
  }
  return 0;
}

/// Whether DIR is a mount point (its parent is on another device): it
/// cannot be renamed, so the dump goes file by file inside it.
bool isMountPoint(const std::string &dir) {
  struct stat st, up;
  std::string parent = dir + "/..";
  return ::stat(dir.c_str(), &st) == 0 && ::stat(parent.c_str(), &up) == 0 &&
         (st.st_dev != up.st_dev || st.st_ino == up.st_ino);
}

/// The dump file by file inside DIR (each file to a temporary beside it,
/// then all renamed into place, the previous files put back on a failure):
/// for a DIR that cannot be swapped whole (a mount point). All or nothing
/// on an error, not under a signal.
int dumpInPlace(const MuirRtContext *ctx, const char *dir) {
  // Temporaries written so far (temporary, final path), the folders this
  // call created, and each previous file's second name until every new
  // file is in place: a hard link (the file stays where it was) or, where
  // the file system has none, the file itself moved aside.
  struct Kept {
    std::string path;
    bool moved = false;
  };
  std::vector<std::pair<std::string, std::string>> pending;
  std::vector<std::string> created;
  std::vector<Kept> kept;
  size_t renamed = 0;
  auto rollBack = [&] {
    // Files already renamed into place go back to their previous version
    // (or away, if there was none); a previous file moved aside goes back;
    // temporaries, second names and new folders go.
    for (size_t i = 0; i < pending.size(); ++i) {
      const Kept *k = i < kept.size() && !kept[i].path.empty() ? &kept[i]
                                                                : nullptr;
      if (i < renamed) {
        if (k)
          ::rename(k->path.c_str(), pending[i].second.c_str());
        else
          ::unlink(pending[i].second.c_str());
        continue;
      }
      ::unlink(pending[i].first.c_str());
      if (k && k->moved)
        ::rename(k->path.c_str(), pending[i].second.c_str());
      else if (k)
        ::unlink(k->path.c_str());
    }
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      ::rmdir(it->c_str());
  };
  int rc = guarded([&]() -> int {
    if (!ctx)
      return fail("muirrt_dump_dir: null context");
    if (!dir || !*dir)
      return fail("muirrt_dump_dir: empty directory path");
    std::string base = dir;
    // Every target is checked before anything is written: a folder or a
    // link in the way fails the dump with nothing changed.
    std::vector<std::string> missing;
    for (const Tensor &t : ctx->tensors)
      if (int rc = checkDumpTarget(base, t.name, &missing))
        return rc;
    if (int rc = makeDirs(base, &created))
      return rc;
    for (const std::string &d : missing) {
      if (::mkdir(d.c_str(), 0777) == 0)
        created.push_back(d);
      else if (errno != EEXIST)
        return fail("cannot create directory '" + d + "': " + errnoText(errno));
    }
    pending.reserve(ctx->tensors.size());

    // Phase 1: every tensor to a temporary next to its final name, so a
    // failure (full disk, bad folder) leaves the previous dump untouched.
    for (const Tensor &t : ctx->tensors) {
      std::string path = joinPath(base, t.name + ".npy"), tmp;
      if (int rc = writeTemp(path, t.data.get(), t.elementSize(), t.rank,
                             t.shape, tmp))
        return rc;
      pending.emplace_back(tmp, path);
    }

    // Phase 2: keep each previous file under a second name, then rename()
    // the new one over it; a failure puts every previous file back, so the
    // dump is all new or all old.
    kept.assign(pending.size(), Kept());
    int err = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      const std::string &path = pending[i].second;
      if (entryAt(path, err) != Entry::File)
        continue;
      std::string keep;
      for (int attempt = 0; attempt < 100 && keep.empty(); ++attempt) {
        std::string name = sideName(path, "old");
        if (::link(path.c_str(), name.c_str()) == 0) {
          keep = name;
        } else if (errno == EEXIST) {
          continue;
        } else if (entryAt(name, err) == Entry::None && err == ENOENT &&
                   ::rename(path.c_str(), name.c_str()) == 0) {
          // No hard links here: the file itself moves aside.
          keep = name;
          kept[i].moved = true;
        } else {
          return fail(path + ": cannot keep the previous file: " +
                      errnoText(errno));
        }
      }
      if (keep.empty())
        return fail(path + ": cannot find a free name to keep the previous "
                           "file under");
      kept[i].path = keep;
    }
    for (; renamed < pending.size(); ++renamed)
      if (::rename(pending[renamed].first.c_str(),
                   pending[renamed].second.c_str()) != 0)
        return fail(pending[renamed].second + ": cannot rename '" +
                    pending[renamed].first +
                    "' into place: " + errnoText(errno));
    for (const Kept &k : kept)
      if (!k.path.empty())
        ::unlink(k.path.c_str());
    return 0;
  });
  if (rc != 0)
    rollBack();
  return rc;
}

} // namespace

extern "C" int muirrt_write_dir(const MuirRtContext *ctx, const char *dir) {
  return guarded([&]() -> int {
    if (!ctx)
      return fail("muirrt_write_dir: null context");
    if (!dir || !*dir)
      return fail("muirrt_write_dir: empty directory path");
    return writeTensors(ctx, dir);
  });
}

extern "C" int muirrt_dump_dir(const MuirRtContext *ctx, const char *dir) {
  // The new dump is built in a staging directory beside DIR (the old
  // dump's other files carried over as hard links), which then takes DIR's
  // place in one rename: DIR is the old dump whole or the new one whole,
  // also under a signal (Staging.cpp removes the staging directory).
  std::vector<std::string> created;
  char staged[PATH_MAX] = {0};
  int rc = guarded([&]() -> int {
    if (!ctx)
      return fail("muirrt_dump_dir: null context");
    if (!dir || !*dir)
      return fail("muirrt_dump_dir: empty directory path");
    std::string base = dir;
    // Every target is checked before anything is written: a folder or a
    // link in the way fails the dump with nothing changed.
    std::set<std::string> replaced;
    for (const Tensor &t : ctx->tensors) {
      if (int rc = checkDumpTarget(base, t.name, nullptr))
        return rc;
      replaced.insert(t.name + ".npy");
    }
    if (isMountPoint(base))
      return dumpInPlace(ctx, dir);
    std::string parent = base;
    while (parent.size() > 1 && parent.back() == '/')
      parent.pop_back();
    size_t slash = parent.find_last_of('/');
    parent = slash == std::string::npos ? "." : slash == 0 ? "/" : parent.substr(0, slash);
    if (int rc = makeDirs(parent, &created))
      return rc;
    if (muirrt_stage_dir(dir, staged, sizeof(staged)))
      return 1;
    struct stat st;
    if (::stat(dir, &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return fail("cannot write in directory '" + base +
                    "': " + errnoText(ENOTDIR));
      ::chmod(staged, st.st_mode & 07777);
      if (int rc = carryOver(base, staged, "", replaced, 0))
        return rc;
    }
    if (int rc = writeTensors(ctx, staged))
      return rc;
    if (muirrt_stage_commit(staged, dir))
      return 1;
    staged[0] = 0;
    return 0;
  });
  if (rc != 0) {
    std::string why = muirrt_last_error();
    if (staged[0])
      muirrt_stage_abort(staged);
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      ::rmdir(it->c_str());
    fail(why);
  }
  return rc;
}

//===----------------------------------------------------------------------===//
// Single files
//===----------------------------------------------------------------------===//

extern "C" int muirrt_npy_read(const char *path, float **data, int32_t *rank,
                               int64_t shape[8]) {
  if (data)
    *data = nullptr;
  return guarded([&]() -> int {
    if (!path || !*path)
      return fail("muirrt_npy_read: empty path");
    if (!data || !rank || !shape)
      return fail(std::string(path) + ": null output argument");
    std::string p = path;
    int fd;
    if (int rc = openForRead(p, fd))
      return rc;
    FdCloser closer{fd};
    NpyHeader h;
    if (int rc = readNpyHeader(fd, p, h))
      return rc;
    if (h.elementSize != 4)
      return fail(p + ": expected dtype " + npyDescr(4) + ", found " +
                  npyDescr(h.elementSize));
    size_t bytes = static_cast<size_t>(h.numel) * sizeof(float);
    // malloc(0) may return NULL; always hand back a freeable pointer.
    float *buf = static_cast<float *>(std::malloc(bytes ? bytes : 1));
    if (!buf)
      return fail(p + ": out of memory (" + std::to_string(bytes) + " bytes)");
    if (int rc = readNpyData(fd, p, h, buf)) {
      std::free(buf);
      return rc;
    }
    *data = buf;
    *rank = h.rank;
    for (int32_t i = 0; i < kMaxRank; ++i)
      shape[i] = i < h.rank ? h.shape[i] : 0;
    return 0;
  });
}

extern "C" int muirrt_npy_write_atomic(const char *path, const float *data,
                                       int32_t rank, const int64_t *shape) {
  return guarded([&]() -> int {
    if (!path || !*path)
      return fail("muirrt_npy_write_atomic: empty path");
    std::string p = path, tmp;
    int64_t numel = 0;
    if (int rc = checkShapeArgs(p, rank, shape, numel))
      return rc;
    if (numel > 0 && !data)
      return fail(p + ": null data");
    if (int rc = writeTemp(p, data, 4, rank, shape, tmp))
      return rc;
    return renameInto(tmp, p);
  });
}
