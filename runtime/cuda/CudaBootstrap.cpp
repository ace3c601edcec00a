//===- CudaBootstrap.cpp - NCCL's world communicator ----------------------===//
//
// This process's place on the grid and the world communicator, from a
// unique id distributed by MPI, by a TCP exchange for torchrun-style
// launchers (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or by the
// caller (muirrt_cuda_unique_id); and the communicators' teardown.
//
//===----------------------------------------------------------------------===//
#include "muir-rt/CudaRuntime.h"

#include "CudaInternal.h"

#include <nccl.h>

#if MUIR_RT_HAVE_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace muirrt_cuda_detail;

namespace {

// Sends or receives exactly n bytes; false on error or EOF.
bool sendAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recvAll(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// The address and port of the id exchange: MASTER_ADDR and, so as not to
// collide with torchrun's own store on MASTER_PORT, MUIR_NCCL_PORT or else
// MASTER_PORT + 1.
bool exchangeEndpoint(std::string &host, int &port, std::string &why) {
  const char *addr = std::getenv("MASTER_ADDR");
  const char *own = std::getenv("MUIR_NCCL_PORT");
  const char *master = std::getenv("MASTER_PORT");
  if (!addr || (!own && !master)) {
    why = "MASTER_ADDR and MASTER_PORT (or MUIR_NCCL_PORT) must be set";
    return false;
  }
  host = addr;
  port = own ? std::atoi(own) : std::atoi(master) + 1;
  if (port <= 0 || port > 65535) {
    why = "bad port " + std::to_string(port);
    return false;
  }
  return true;
}

} // namespace

// The NCCL unique id for a run started by torchrun (or any launcher that
// sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): rank 0 makes it and
// serves it over TCP to the other world - 1 ranks, which connect (retrying
// for MUIR_NCCL_TIMEOUT seconds, 120 by default). Exported for the tests.
extern "C" int muirrt_cuda_exchange_unique_id(int64_t rank, int64_t world,
                                              void *id) {
  std::string host, why;
  int port = 0;
  if (!exchangeEndpoint(host, port, why))
    return fail("NCCL bootstrap: " + why);
  const char *t = std::getenv("MUIR_NCCL_TIMEOUT");
  double timeout = t ? std::atof(t) : 120.0;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout * 1e3));
  char *bytes = static_cast<char *>(id);
  const size_t n = sizeof(ncclUniqueId);
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(static_cast<ncclUniqueId *>(id));
    if (r != ncclSuccess)
      return fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    int server = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (server < 0 || ::bind(server, reinterpret_cast<sockaddr *>(&a),
                             sizeof(a)) != 0 ||
        ::listen(server, 128) != 0) {
      if (server >= 0)
        ::close(server);
      return fail("NCCL bootstrap: cannot listen on port " +
                  std::to_string(port) + ": " + std::strerror(errno));
    }
    for (int64_t served = 1; served < world; ++served) {
      int peer = ::accept(server, nullptr, nullptr);
      bool ok = peer >= 0 && sendAll(peer, bytes, n);
      if (peer >= 0)
        ::close(peer);
      if (!ok) {
        ::close(server);
        return fail("NCCL bootstrap: sending the id failed");
      }
    }
    ::close(server);
    return 0;
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                  &found) != 0 ||
      !found)
    return fail("NCCL bootstrap: cannot resolve MASTER_ADDR '" + host + "'");
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      bool ok = recvAll(fd, bytes, n);
      ::close(fd);
      freeaddrinfo(found);
      return ok ? 0 : fail("NCCL bootstrap: receiving the id failed");
    }
    if (fd >= 0)
      ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      freeaddrinfo(found);
      return fail("NCCL bootstrap: rank 0 at " + host + ":" +
                  std::to_string(port) + " did not answer within " +
                  std::to_string(timeout) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// This process's place on the grid (state.sizes): rank and coordinates;
/// -1 when `size` processes cannot run the grid.
static int placeOnGrid(int64_t rank, int64_t size) {
  int64_t world = 1;
  for (int64_t s : state.sizes)
    world *= s;
  if (size != world)
    return fail("the grid has " + std::to_string(world) + " ranks but " +
                std::to_string(size) + " processes run");
  state.rank = rank;
  state.worldSize = size;
  state.coords.assign(state.sizes.size(), 0);
  muirrt_grid_coords(static_cast<int32_t>(state.sizes.size()),
                     state.sizes.data(), rank, state.coords.data());
  return 0;
}

/// The world communicator from the job's unique id (once per process).
static int joinWorld(const ncclUniqueId &id, int64_t rank, int64_t size) {
  if (state.world)
    return fail("NCCL is initialised already in this process");
  ncclResult_t r = ncclCommInitRank(&state.world, static_cast<int>(size), id,
                                    static_cast<int>(rank));
  if (r != ncclSuccess)
    return fail(std::string("ncclCommInitRank: ") + ncclGetErrorString(r));
  return 0;
}

extern "C" int muirrt_cuda_dist_init(const int64_t *sizes, int32_t num_axes) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  state.sizes.assign(sizes, sizes + num_axes);
  int rank = 0, size = 1;
  bool viaMpi = false;
#if MUIR_RT_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    viaMpi = size > 1;
  }
#endif
  if (!viaMpi && std::getenv("WORLD_SIZE") && std::getenv("RANK")) {
    size = std::atoi(std::getenv("WORLD_SIZE"));
    rank = std::atoi(std::getenv("RANK"));
  }
  if (placeOnGrid(rank, size) != 0)
    return -1;
  if (size == 1)
    return 0;
  ncclUniqueId id;
  if (viaMpi) {
#if MUIR_RT_HAVE_MPI
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
      return fail("ncclGetUniqueId failed");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
  } else if (muirrt_cuda_exchange_unique_id(rank, size, &id) != 0) {
    return -1;
  }
  return joinWorld(id, rank, size);
}

/// NCCL from a unique id the caller distributed (a PyTorch job through its
/// own process group): rank 0 makes it with muirrt_cuda_unique_id.
extern "C" int muirrt_cuda_unique_id(void *out) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  ncclResult_t r = ncclGetUniqueId(static_cast<ncclUniqueId *>(out));
  if (r != ncclSuccess)
    return fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  return 0;
}

extern "C" int muirrt_cuda_dist_init_with_id(const int64_t *sizes,
                                             int32_t num_axes, int64_t rank,
                                             int64_t size, const void *id) {
  if (muirrt_cuda_init(-1) != 0)
    return -1;
  state.sizes.assign(sizes, sizes + num_axes);
  if (placeOnGrid(rank, size) != 0)
    return -1;
  if (size == 1)
    return 0;
  ncclUniqueId nid;
  std::memcpy(&nid, id, sizeof(nid));
  return joinWorld(nid, rank, size);
}

extern "C" void muirrt_cuda_dist_finalize(void) {
  for (auto &[mask, g] : state.groups)
    if (g.comm)
      ncclCommDestroy(g.comm);
  state.groups.clear();
  state.countExchanges.clear();
  if (state.world)
    ncclCommDestroy(state.world);
  state.world = nullptr;
}
