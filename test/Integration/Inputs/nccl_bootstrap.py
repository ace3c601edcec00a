"""The CUDA runtime's torchrun bootstrap of NCCL, without a GPU: WORLD
processes, each given torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), call muirrt_cuda_exchange_unique_id from
libmuir_rt_cuda.so (ctypes); rank 0 makes the NCCL unique id
(ncclGetUniqueId needs no GPU) and serves it on MASTER_PORT + 1, the others
connect, started before rank 0 listens (they retry). Every rank must end
with the same 128 bytes, not all zero. Then: no rank 0 within
MUIR_NCCL_TIMEOUT is an error naming the address; MASTER_ADDR unset is an
error."""
import ctypes
import os
import socket
import subprocess
import sys

lib_path, world = sys.argv[1], int(sys.argv[2])
role = sys.argv[3] if len(sys.argv) > 3 else "parent"

if role == "child":
    lib = ctypes.CDLL(lib_path)
    lib.muirrt_cuda_last_error.restype = ctypes.c_char_p
    buf = ctypes.create_string_buffer(128)
    rc = lib.muirrt_cuda_exchange_unique_id(
        ctypes.c_int64(int(os.environ["RANK"])), ctypes.c_int64(world), buf)
    if rc != 0:
        print("error: " + lib.muirrt_cuda_last_error().decode())
        sys.exit(1)
    print(buf.raw.hex())
    sys.exit(0)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


base = free_port()
env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
           MASTER_PORT=str(base - 1))
# The receivers first: they must wait for rank 0.
procs = [subprocess.Popen([sys.executable, __file__, lib_path, str(world),
                           "child"], env=dict(env, RANK=str(r)),
                          stdout=subprocess.PIPE, text=True)
         for r in list(range(1, world)) + [0]]
outs = [p.communicate(timeout=60)[0].strip() for p in procs]
ok = all(p.returncode == 0 for p in procs)
ids = set(outs)
print("ranks %d: exit codes %s, distinct ids %d, id zero %s" % (
    world, [p.returncode for p in procs], len(ids),
    outs[0] == "00" * 128))
ok &= len(ids) == 1 and outs[0] != "00" * 128

# Nobody serves: an error within the timeout, naming the address.
lone = subprocess.run([sys.executable, __file__, lib_path, "2", "child"],
                      env=dict(env, RANK="1", MUIR_NCCL_TIMEOUT="1",
                               MASTER_PORT=str(free_port() - 1)),
                      stdout=subprocess.PIPE, text=True, timeout=60)
print(lone.stdout.strip())
noaddr = dict(env, RANK="1")
del noaddr["MASTER_ADDR"]
missing = subprocess.run([sys.executable, __file__, lib_path, "2", "child"],
                         env=noaddr, stdout=subprocess.PIPE, text=True,
                         timeout=60)
print(missing.stdout.strip())
ok &= lone.returncode != 0 and missing.returncode != 0
print("ALL PASSED" if ok else "FAIL")
sys.exit(0 if ok else 1)
