//===- Npy.cpp - the .npy format of the runtime's host half ---------------===//
//
// Reading and validating NumPy v1.0 .npy headers (float32 or float64, C
// order), the
// payload, and writing complete files as numpy.save lays them out, through
// a temporary renamed into place. Used by Host.cpp (muirrt_load_dir,
// muirrt_dump_dir, muirrt_npy_read, muirrt_npy_write_atomic).
//
//===----------------------------------------------------------------------===//
#include "HostInternal.h"
#include "muir-rt/FileKind.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace [[gnu::visibility("hidden")]] muirrt_host {

//===----------------------------------------------------------------------===//
// .npy format
//===----------------------------------------------------------------------===//

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeaderLen = 10000;
constexpr size_t kMagicLen = 6;

// Parser for the Python dict literal in a .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Accepts exactly what NumPy writes plus harmless variations (either quote
// style, any key order, optional trailing commas, Python 2 'L' suffixes).
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &path)
      : text(text), path(path) {}

  int parse(NpyHeader &out) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    std::string descr;
    bool fortran = false;
    skipSpace();
    if (!consume('{'))
      return malformed("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return malformed("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return malformed("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (peek() == '[' || peek() == '{')
          return fail(path + ": unsupported dtype (structured array); only "
                             "'<f4' and '<f8' (little-endian float32 and "
                             "float64) are supported");
        if (!parseString(descr))
          return malformed("expected a string for 'descr'");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (consumeWord("True"))
          fortran = true;
        else if (consumeWord("False"))
          fortran = false;
        else
          return malformed("expected True or False for 'fortran_order'");
        haveOrder = true;
      } else if (key == "shape") {
        if (int rc = parseShape(out))
          return rc;
        haveShape = true;
      } else {
        return malformed("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return malformed("expected ',' or '}'");
    }
    skipSpace();
    if (pos != text.size())
      return malformed("unexpected text after the dictionary");
    if (!haveDescr || !haveOrder || !haveShape)
      return malformed("missing 'descr', 'fortran_order' or 'shape'");
    if (descr != "<f4" && descr != "<f8")
      return fail(path + ": unsupported dtype '" + descr +
                  "'; only '<f4' and '<f8' (little-endian float32 and "
                  "float64) are supported");
    out.elementSize = descr == "<f8" ? 8 : 4;
    if (fortran)
      return fail(path + ": fortran_order True is not supported; expected "
                         "C-order (row-major) data");
    return 0;
  }

private:
  const std::string &text;
  const std::string &path;
  size_t pos = 0;

  int malformed(const std::string &why) {
    return fail(path + ": malformed .npy header: " + why);
  }
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos;
    return true;
  }
  bool consumeWord(const char *w) {
    size_t n = std::strlen(w);
    if (text.compare(pos, n, w) != 0)
      return false;
    pos += n;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool parseString(std::string &out) {
    char q = peek();
    if (q != '\'' && q != '"')
      return false;
    size_t end = text.find(q, pos + 1);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return true;
  }
  int parseShape(NpyHeader &out) {
    if (!consume('('))
      return malformed("expected a tuple for 'shape'");
    out.rank = 0;
    out.numel = 1;
    while (true) {
      skipSpace();
      if (consume(')'))
        return 0;
      if (peek() < '0' || peek() > '9')
        return malformed("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        int digit = peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return malformed("dimension too large in 'shape'");
        v = v * 10 + digit;
        ++pos;
      }
      consume('L');
      if (out.rank == kMaxRank)
        return fail(path + ": rank exceeds " + std::to_string(kMaxRank));
      out.shape[out.rank++] = v;
      // The element count must stay representable (the bytes are checked
      // once the element type is known: readNpyHeader).
      if (v != 0 && out.numel > std::numeric_limits<int64_t>::max() / v)
        return fail(path + ": shape starting " +
                    shapeString(out.rank, out.shape) +
                    " has more than 2^63 elements");
      out.numel *= v;
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return 0;
      return malformed("expected ',' or ')' in 'shape'");
    }
  }
};

// Reads and validates the header of the open .npy file `fd`. On success
// `h` describes the data, which the file holds exactly (no more, no less).
int readNpyHeader(int fd, const std::string &path, NpyHeader &h) {
  unsigned char pre[12];
  ssize_t got = readFull(fd, pre, 8);
  if (got < 0)
    return fail(path + ": read error: " + errnoText(errno));
  size_t cmp = std::min<size_t>(static_cast<size_t>(got), kMagicLen);
  if (std::memcmp(pre, kMagic, cmp) != 0)
    return fail(path + ": not a .npy file (bad magic)");
  if (got < 8)
    return fail(path + ": truncated .npy header");
  unsigned major = pre[6], minor = pre[7];
  size_t lenBytes;
  if (major == 1)
    lenBytes = 2;
  else if (major == 2 || major == 3)
    lenBytes = 4; // 3.0 only differs by allowing UTF-8 in the header.
  else
    return fail(path + ": unsupported .npy format version " +
                std::to_string(major) + "." + std::to_string(minor));
  got = readFull(fd, pre + 8, lenBytes);
  if (got < 0)
    return fail(path + ": read error: " + errnoText(errno));
  if (static_cast<size_t>(got) < lenBytes)
    return fail(path + ": truncated .npy header");
  size_t headerLen = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    headerLen |= static_cast<size_t>(pre[8 + i]) << (8 * i);
  // NumPy itself refuses headers over 10000 bytes (numpy.load's
  // max_header_size); and the file must hold the header it announces,
  // checked before the header is read into memory.
  if (headerLen > kMaxHeaderLen)
    return fail(path + ": .npy header of " + std::to_string(headerLen) +
                " bytes is larger than the " + std::to_string(kMaxHeaderLen) +
                " NumPy reads");
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return fail(path + ": cannot stat: " + errnoText(errno));
  if (static_cast<uint64_t>(st.st_size) < 8 + lenBytes + headerLen)
    return fail(path + ": truncated .npy header");
  std::string header(headerLen, '\0');
  got = readFull(fd, &header[0], headerLen);
  if (got < 0)
    return fail(path + ": read error: " + errnoText(errno));
  if (static_cast<size_t>(got) < headerLen)
    return fail(path + ": truncated .npy header");
  HeaderParser parser(header, path);
  if (int rc = parser.parse(h))
    return rc;
  h.dataOffset = 8 + lenBytes + headerLen;

  int64_t expected;
  if (__builtin_mul_overflow(h.numel, static_cast<int64_t>(h.elementSize),
                             &expected))
    return fail(path + ": shape " + shapeString(h.rank, h.shape) + " of " +
                (h.elementSize == 8 ? "<f8" : "<f4") +
                " is larger than 2^63 bytes");
  int64_t available =
      static_cast<int64_t>(st.st_size) - static_cast<int64_t>(h.dataOffset);
  if (available < expected)
    return fail(path + ": truncated data: expected " +
                std::to_string(expected) + " bytes for shape " +
                shapeString(h.rank, h.shape) + ", found " +
                std::to_string(available < 0 ? 0 : available));
  if (available > expected)
    return fail(path + ": " + std::to_string(available - expected) +
                " unexpected bytes after the data for shape " +
                shapeString(h.rank, h.shape));
  return 0;
}

int openForRead(const std::string &path, int &fd) {
  // The one place the runtime opens a .npy file to read: only a regular
  // file. The open does not block (a FIFO would wait for a writer
  // forever); its kind is checked on the descriptor, so nothing can swap
  // the file between the check and the read.
  fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(path + ": cannot open: " + errnoText(errno));
  struct stat st;
  const char *why = nullptr;
  if (::fstat(fd, &st) != 0)
    why = "cannot stat it";
  else if (!(why = muirrt_not_regular(st.st_mode)) &&
           ::fcntl(fd, F_SETFL, O_RDONLY) != 0)
    why = "cannot read it";
  if (why) {
    ::close(fd);
    fd = -1;
    return fail(path + ": not a regular file (" + why + ")");
  }
  return 0;
}

// Reads the payload that follows the header (the file position is already
// at the data).
int readNpyData(int fd, const std::string &path, const NpyHeader &h,
                void *dst) {
  size_t bytes = static_cast<size_t>(h.numel) * h.elementSize;
  ssize_t got = readFull(fd, dst, bytes);
  if (got < 0)
    return fail(path + ": read error: " + errnoText(errno));
  if (static_cast<size_t>(got) != bytes)
    return fail(path + ": truncated data");
  return 0;
}

// The complete NumPy v1.0 preamble (magic, version, length, header dict).
// Laid out as numpy.save does: keys sorted, spare spaces after the dict so
// the first axis can grow in place, then padded with spaces and a final
// newline so the data starts at a multiple of 64 bytes.
std::string npyPreamble(int32_t elementSize, int32_t rank,
                        const int64_t *shape) {
  std::string dict = std::string("{'descr': '") +
                     (elementSize == 8 ? "<f8" : "<f4") +
                     "', 'fortran_order': False, 'shape': " +
                     shapeString(rank, shape) + ", }";
  if (rank > 0) {
    const size_t growthDigits = 21;
    size_t firstLen = std::to_string(shape[0]).size();
    if (firstLen < growthDigits)
      dict.append(growthDigits - firstLen, ' ');
  }
  // 6 magic + 2 version + 2 length bytes, then dict, padding and '\n'.
  size_t used = kMagicLen + 2 + 2 + dict.size() + 1;
  size_t pad = kAlign - used % kAlign; // 1..64, as NumPy does
  std::string header = dict + std::string(pad, ' ') + "\n";
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  return out;
}

int checkShapeArgs(const std::string &path, int32_t rank, const int64_t *shape,
                   int64_t &numel) {
  if (rank < 0 || rank > kMaxRank)
    return fail(path + ": rank " + std::to_string(rank) + " out of range [0, " +
                std::to_string(kMaxRank) + "]");
  if (rank > 0 && !shape)
    return fail(path + ": null shape");
  numel = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return fail(path + ": negative dimension in shape " +
                  shapeString(rank, shape));
    if (shape[i] != 0 &&
        numel > std::numeric_limits<int64_t>::max() / 8 / shape[i])
      return fail(path + ": shape too large");
    numel *= shape[i];
  }
  return 0;
}

// Writes a complete .npy file at exactly `file`, a temporary that must not
// exist yet (O_EXCL: a file of the user's by that name is never
// truncated). On failure the partial file is removed.
int writeNpyFile(const std::string &file, const void *data,
                 int32_t elementSize, int32_t rank, const int64_t *shape) {
  int64_t numel = 0;
  if (int rc = checkShapeArgs(file, rank, shape, numel))
    return rc;
  if (elementSize != 4 && elementSize != 8)
    return fail(file + ": element size " + std::to_string(elementSize) +
                " (expected 4 or 8)");
  std::string pre = npyPreamble(elementSize, rank, shape);
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(file + ": cannot create: " + errnoText(errno));
  // No data: zeros, the file's whole size, for ranks to fill by parts.
  size_t bytes = static_cast<size_t>(numel) * elementSize;
  bool ok = writeFull(fd, pre.data(), pre.size()) &&
            (data ? writeFull(fd, data, bytes)
                  : ::ftruncate(fd, static_cast<off_t>(pre.size() + bytes)) ==
                        0);
  int err = errno;
  // close() can report a deferred write error (e.g. on NFS or a full disk).
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(file.c_str());
    return fail(file + ": write error: " + errnoText(err));
  }
  return 0;
}

// Writes the tensor to a new temporary beside `path` (its name in `tmp`),
// skipping names a leftover of another process already holds.
int writeTemp(const std::string &path, const void *data, int32_t elementSize,
              int32_t rank, const int64_t *shape, std::string &tmp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = tempPathFor(path);
    int err = 0;
    if (entryAt(tmp, err) == Entry::None && err == ENOENT)
      return writeNpyFile(tmp, data, elementSize, rank, shape);
  }
  return fail(path + ": cannot find a free name for a temporary beside it");
}

int renameInto(const std::string &tmp, const std::string &path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return fail(path + ": cannot rename '" + tmp +
                "' into place: " + errnoText(err));
  }
  return 0;
}

} // namespace muirrt_host
