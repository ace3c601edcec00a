//===- Files.h - the tools' input and output files ---------------*- C++ -*-===//
//
// Every file the tools read (descriptions, Hugging Face configs, IR,
// fingerprint traces, state manifests) is read whole into memory. A file
// bigger than kMaxInputBytes, or a device or pipe that goes on past it
// (/dev/zero), is refused with a message before it can exhaust memory.
// A file muir finds by itself rather than one the user names (FileOrigin)
// is opened by one function, openFoundFile, which accepts only a regular
// file (and, for code it will run, one this user owns alone).
// Outputs are checked against each other and against the inputs before any
// work (samePath), so that no output overwrites an input or another output,
// and written whole or not at all (AtomicOutput).
// Header-only: muir-trace-diff links LLVM's support library only.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_SUPPORT_FILES_H
#define MUIR_SUPPORT_FILES_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>
#include <optional>
#include <string>

#include "muir-rt/FileKind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mlir::muir {

/// The largest input the tools read: 256 MiB (docs/muir-compile.md).
inline constexpr uint64_t kMaxInputBytes = uint64_t(256) << 20;

/// Who put a file where muir reads it, which decides what muir accepts.
enum class FileOrigin {
  /// The user named it (an input on the command line): a pipe or a device
  /// is read as a stream (`muir-run <(...)`).
  Named,
  /// muir found it by itself (a state's manifest and tensors, the .npy
  /// files of a load directory): only a regular file, possibly through a
  /// symbolic link; a FIFO, a device or a directory is refused before it
  /// could block or never end.
  Found,
  /// Code or data muir will trust (a compiled-step cache entry and its
  /// record): a regular file, not a symbolic link, owned by this user and
  /// writable by no one else.
  Trusted,
};

/// Opens `path` for reading as a file of `origin` (never Named): the open
/// itself does not block (O_NONBLOCK, cleared once the file is known to be
/// regular), so a FIFO is refused, not waited on. Returns the descriptor,
/// or -1 with `error` saying why ("'x' is not a regular file (a FIFO)").
inline int openFoundFile(llvm::StringRef path, FileOrigin origin,
                         std::string &error) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
  if (origin == FileOrigin::Trusted)
    flags |= O_NOFOLLOW;
  int fd = ::open(path.str().c_str(), flags);
  if (fd < 0) {
    int err = errno;
    error = ("cannot open '" + path + "': " +
             (err == ELOOP ? std::string("it is a symbolic link")
                           : std::string(std::strerror(err))))
                .str();
    return -1;
  }
  struct stat st;
  const char *why = nullptr;
  if (::fstat(fd, &st) != 0)
    why = "cannot stat it";
  else
    why = muirrt_not_regular(st.st_mode);
  if (!why && origin == FileOrigin::Trusted && st.st_uid != ::geteuid())
    why = "it is owned by another user";
  else if (!why && origin == FileOrigin::Trusted &&
           (st.st_mode & (S_IWGRP | S_IWOTH)))
    why = "it is writable by group or others";
  if (!why && ::fcntl(fd, F_SETFL, O_RDONLY) != 0)
    why = "cannot read it";
  if (why) {
    ::close(fd);
    error = ("'" + path + "' cannot be read: " + why).str();
    return -1;
  }
  return fd;
}

/// Reads `path` ("-": stdin) whole if it holds at most `limit` bytes; else
/// nothing, with `error` saying why: "cannot open input file 'x': <why>" or
/// "input file 'x' is larger than the 256 MiB limit". A file of another
/// origin than Named is opened by openFoundFile: only a regular file.
inline std::unique_ptr<llvm::MemoryBuffer>
readBoundedFile(llvm::StringRef path, std::string &error,
                uint64_t limit = kMaxInputBytes,
                FileOrigin origin = FileOrigin::Named) {
  namespace fs = llvm::sys::fs;
  auto tooLarge = [&] {
    error = ("input file '" + path + "' is larger than the " +
             llvm::Twine(limit >> 20) + " MiB limit")
                .str();
    return nullptr;
  };
  fs::file_t fd = fs::getStdinHandle();
  bool isStdin = path == "-" && origin == FileOrigin::Named;
  if (!isStdin && origin != FileOrigin::Named) {
    fd = openFoundFile(path, origin, error);
    if (fd < 0)
      return nullptr;
  } else if (!isStdin) {
    auto opened = fs::openNativeFileForRead(path);
    if (!opened) {
      error = ("cannot open input file '" + path +
               "': " + llvm::toString(opened.takeError()))
                  .str();
      return nullptr;
    }
    fd = *opened;
  }
  if (!isStdin) {
    fs::file_status status;
    if (std::error_code ec = fs::status(fd, status)) {
      fs::closeFile(fd);
      error = ("cannot open input file '" + path + "': " + ec.message()).str();
      return nullptr;
    }
    if (fs::is_directory(status)) {
      fs::closeFile(fd);
      error = ("cannot open input file '" + path +
               "': " + std::make_error_code(std::errc::is_a_directory).message())
                  .str();
      return nullptr;
    }
    if (fs::is_regular_file(status)) {
      if (status.getSize() > limit) {
        fs::closeFile(fd);
        return tooLarge();
      }
      // A regular file's size is known: read it in one go.
      auto buffer = llvm::MemoryBuffer::getOpenFile(
          fd, path, status.getSize(), /*RequiresNullTerminator=*/true);
      fs::closeFile(fd);
      if (!buffer) {
        error = ("cannot read input file '" + path +
                 "': " + buffer.getError().message())
                    .str();
        return nullptr;
      }
      return std::move(*buffer);
    }
  }
  // A device or pipe: read in chunks of 1 MiB, stopping at the limit. The
  // chunks are kept apart (no reallocation doubling the memory) and put
  // together once the end is reached. They come from malloc, which returns
  // null when memory runs out (operator new would call LLVM's handler,
  // which aborts): an error, not a crash.
  constexpr size_t kChunk = size_t(1) << 20;
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<char, Free>> chunks;
  size_t total = 0, last = kChunk;
  auto finish = [&](std::unique_ptr<llvm::MemoryBuffer> result) {
    if (!isStdin)
      fs::closeFile(fd);
    return result;
  };
  while (true) {
    if (last == kChunk) {
      chunks.emplace_back(static_cast<char *>(std::malloc(kChunk)));
      if (!chunks.back()) {
        error = ("out of memory reading input file '" + path + "'").str();
        return finish(nullptr);
      }
      last = 0;
    }
    auto got = fs::readNativeFile(
        fd, llvm::MutableArrayRef<char>(chunks.back().get() + last,
                                        kChunk - last));
    if (!got) {
      error = ("cannot read input file '" + path +
               "': " + llvm::toString(got.takeError()))
                  .str();
      return finish(nullptr);
    }
    if (*got == 0)
      break;
    last += *got;
    total += *got;
    if (total > limit) {
      tooLarge();
      return finish(nullptr);
    }
  }
  // The whole buffer: its size tried with malloc first (LLVM allocates it
  // with operator new, whose failure aborts); the chunks are freed as they
  // are copied.
  std::unique_ptr<llvm::WritableMemoryBuffer> buffer;
  if (void *probe = std::malloc(total + 64)) {
    std::free(probe);
    buffer = llvm::WritableMemoryBuffer::getNewUninitMemBuffer(
        total, isStdin ? "<stdin>" : path);
  }
  if (!buffer) {
    error = ("out of memory reading input file '" + path + "'").str();
    return finish(nullptr);
  }
  for (size_t i = 0, at = 0; i < chunks.size(); ++i) {
    size_t n = std::min(kChunk, total - at);
    std::memcpy(buffer->getBufferStart() + at, chunks[i].get(), n);
    chunks[i].reset();
    at += n;
  }
  return finish(std::move(buffer));
}

/// An output file written whole or not at all: the text goes to a
/// temporary beside `path`, which commit() renames over it; an error, or
/// the object's end without commit(), removes the temporary and leaves
/// what was at `path` as it was. "-" is stdout. A symbolic link is
/// followed (the file it names is replaced, the link stays); a device, a
/// pipe or a socket (/dev/null) is written directly, as it cannot be
/// replaced.
class AtomicOutput {
public:
  static std::unique_ptr<AtomicOutput> open(llvm::StringRef path,
                                            std::string &error) {
    std::unique_ptr<AtomicOutput> out(new AtomicOutput());
    out->path = path.str();
    if (path == "-") {
      out->stream = std::make_unique<llvm::raw_fd_ostream>(
          1, /*shouldClose=*/false, /*unbuffered=*/false);
      return out;
    }
    namespace fs = llvm::sys::fs;
    auto cannot = [&](const llvm::Twine &why) {
      error = ("cannot write '" + path + "': " + why).str();
      return nullptr;
    };
    llvm::SmallString<256> target(path);
    fs::file_status status;
    if (!fs::status(path, status, /*follow=*/false)) {
      if (fs::is_symlink_file(status) && fs::real_path(path, target))
        return cannot("it is a symbolic link to nothing");
      if (fs::status(target, status))
        return cannot("cannot stat it");
      if (fs::is_directory(status))
        return cannot(
            std::make_error_code(std::errc::is_a_directory).message());
      if (!fs::is_regular_file(status)) {
        std::error_code ec;
        out->stream = std::make_unique<llvm::raw_fd_ostream>(
            target, ec, fs::OF_None);
        if (ec)
          return cannot(ec.message());
        return out;
      }
    }
    out->path = std::string(target);
    auto temp = fs::TempFile::create(target + ".tmp-%%%%%%");
    if (!temp) {
      error = ("cannot write '" + path +
               "': " + llvm::toString(temp.takeError()))
                  .str();
      return nullptr;
    }
    out->temp.emplace(std::move(*temp));
    out->stream = std::make_unique<llvm::raw_fd_ostream>(
        out->temp->FD, /*shouldClose=*/false);
    return out;
  }

  llvm::raw_fd_ostream &os() { return *stream; }

  /// Whether everything written so far reached the temporary.
  bool written(std::string &error) {
    stream->flush();
    if (!stream->has_error())
      return true;
    error = "cannot write '" + path + "': " + stream->error().message();
    stream->clear_error();
    return false;
  }

  /// Puts the file in place; false (and `error`) if it could not be
  /// written whole.
  bool commit(std::string &error) {
    if (!written(error))
      return false;
    if (!temp)
      return true;
    if (llvm::Error e = temp->keep(path)) {
      error = "cannot write '" + path + "': " + llvm::toString(std::move(e));
      return false;
    }
    temp.reset();
    return true;
  }

  ~AtomicOutput() {
    // The stream first: it may still flush into the temporary's file.
    if (stream) {
      stream->clear_error();
      stream.reset();
    }
    if (temp)
      llvm::consumeError(temp->discard());
  }

private:
  AtomicOutput() = default;
  std::string path;
  std::optional<llvm::sys::fs::TempFile> temp;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
};

/// Whether two paths name the same file: the same file on disk if both
/// exist (hard links and symbolic links included), else the same absolute
/// path once "." and ".." are resolved. "-" (stdin/stdout) is only itself.
inline bool samePath(llvm::StringRef a, llvm::StringRef b) {
  if (a == "-" || b == "-")
    return a == b;
  bool equal = false;
  if (!llvm::sys::fs::equivalent(a, b, equal))
    return equal;
  auto normal = [](llvm::StringRef p) {
    llvm::SmallString<256> path(p);
    llvm::sys::fs::make_absolute(path);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    return std::string(path);
  };
  return normal(a) == normal(b);
}

/// `p` absolute with symbolic links, "." and ".." resolved as the kernel
/// resolves them, component by component (".." after a link is the link
/// target's parent); the part that does not exist yet (an output not yet
/// written) is appended as given. Two spellings of one place compare
/// equal.
inline std::string resolvedPath(llvm::StringRef p) {
  namespace fs = llvm::sys::fs;
  namespace path = llvm::sys::path;
  llvm::SmallString<256> abs(p);
  fs::make_absolute(abs);
  llvm::SmallString<256> cur("/");
  bool exists = true;
  for (auto it = path::begin(abs), end = path::end(abs); it != end; ++it) {
    llvm::StringRef part = *it;
    if (part == "/" || part == "." || part.empty())
      continue;
    if (part == "..") {
      path::remove_filename(cur);
      if (cur.empty())
        cur = "/";
      exists = fs::exists(cur);
      continue;
    }
    path::append(cur, part);
    if (!exists)
      continue;
    llvm::SmallString<256> real;
    if (fs::real_path(cur, real))
      exists = false;
    else
      cur = real;
  }
  return std::string(cur);
}

/// Whether `inner` lies inside the folder `outer` (both resolvedPath).
inline bool pathWithin(llvm::StringRef inner, llvm::StringRef outer) {
  if (outer == "/")
    return inner.size() > 1 && inner.starts_with("/");
  return inner.size() > outer.size() + 1 && inner.starts_with(outer) &&
         llvm::sys::path::is_separator(inner[outer.size()]);
}

/// How a run uses a path. An output directory is replaced whole (a dump,
/// a saved state): nothing else of the run may lie inside it.
enum class PathKind { InputFile, InputDir, OutputFile, OutputDir };

/// A path flag of a run: the flag ("--dump", "the input"), its value, how
/// it is used, and whether the user gave it (an empty value given is an
/// error; one not given is no path).
struct PathUse {
  std::string flag;
  std::string path;
  PathKind kind;
  bool given = true;
};

/// The one check of a run's paths, before any work: no output is an input
/// or another output (through links, hard links and ".." too), lies inside
/// a folder the run reads, or holds (as a folder it replaces) any other
/// path of the run; no path flag given is empty. `allowed` are pairs of
/// flags that may name the same path (--save-state into the state being
/// resumed continues the run). The error names both flags; empty if the
/// paths are fine.
inline std::string
checkPathUses(const std::vector<PathUse> &uses,
              const std::vector<std::pair<std::string, std::string>> &allowed =
                  {}) {
  auto isOutput = [](const PathUse &u) {
    return u.kind == PathKind::OutputFile || u.kind == PathKind::OutputDir;
  };
  auto isDir = [](const PathUse &u) {
    return u.kind == PathKind::InputDir || u.kind == PathKind::OutputDir;
  };
  for (const PathUse &u : uses)
    if (u.given && u.path.empty())
      return u.flag + ": the path is empty; give a " +
             (isDir(u) ? "directory" : "file");
  std::vector<std::string> resolved;
  for (const PathUse &u : uses)
    resolved.push_back(u.path.empty() || u.path == "-" ? u.path
                                                       : resolvedPath(u.path));
  auto quoted = [](const PathUse &u) {
    return u.path == "-" ? std::string("to stdout") : "'" + u.path + "'";
  };
  for (size_t i = 0; i < uses.size(); ++i)
    for (size_t j = 0; j < uses.size(); ++j) {
      const PathUse &a = uses[i], &b = uses[j];
      if (i == j || a.path.empty() || b.path.empty() ||
          (!isOutput(a) && !isOutput(b)))
        continue;
      // A device (/dev/null) takes any number of writers.
      auto device = [](const std::string &p) {
        llvm::sys::fs::file_status st;
        return p != "-" && !llvm::sys::fs::status(p, st) &&
               st.type() == llvm::sys::fs::file_type::character_file;
      };
      if (device(a.path) && device(b.path))
        continue;
      bool pairAllowed = false;
      for (const auto &[x, y] : allowed)
        pairAllowed |= (x == a.flag && y == b.flag) ||
                       (x == b.flag && y == a.flag);
      if (i < j && !pairAllowed &&
          (a.path == "-" || b.path == "-"
               // "-" is stdin for an input, stdout for an output.
               ? a.path == b.path && isOutput(a) && isOutput(b)
               : resolved[i] == resolved[j] || samePath(a.path, b.path))) {
        if (isOutput(a) && isOutput(b))
          return a.flag + " and " + b.flag + " both write " + quoted(a) +
                 "; give them different paths";
        const PathUse &out = isOutput(a) ? a : b, &in = isOutput(a) ? b : a;
        return out.flag + " '" + out.path + "' is also " + in.flag +
               ", which the run reads; write it elsewhere";
      }
      // a inside b: b replaced whole loses a; a written inside a folder
      // that is read changes what is read.
      if (a.path == "-" || b.path == "-" || !isDir(b) ||
          !pathWithin(resolved[i], resolved[j]))
        continue;
      if (b.kind == PathKind::OutputDir)
        return b.flag + " '" + b.path + "' replaces that whole directory, " +
               "which holds " + a.flag + " '" + a.path + "'; put " + a.flag +
               " outside it";
      if (isOutput(a))
        return a.flag + " '" + a.path + "' is inside " + b.flag + " '" +
               b.path + "', which the run reads; write it elsewhere";
    }
  return "";
}

} // namespace mlir::muir

#endif // MUIR_SUPPORT_FILES_H
