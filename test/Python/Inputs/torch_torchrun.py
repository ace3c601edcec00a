"""muir.torch under torchrun, the choices of group: a 1-D DeviceMesh runs an
ep=2 layer over its group (against the same layer on process_group=: bitwise
equal outputs and gradients), and a second, different group in the same
process, process_group= and device_mesh= together, a mesh whose "ep" dim
is not the layer's ep, and an ep that does not divide the experts, are
refused with a message that names the fix.

  torchrun --standalone --nproc-per-node 2 torch_torchrun.py
"""
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

import muir.torch as mt

H, F, E, K = 16, 12, 4, 2


def say(line):
    """One write per line: the ranks' lines do not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ok = True
    mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("ep",))
    torch.manual_seed(0)
    a = mt.MoE(H, F, E, K, ep=2, device_mesh=mesh, max_tokens=32)
    b = mt.MoE(H, F, E, K, ep=2, process_group=mesh.get_group(),
               max_tokens=32)
    b.load_state_dict(a.state_dict())
    torch.manual_seed(1 + rank)
    x = torch.randn(20 + 3 * rank, H)
    outs = []
    for layer in (a, b):
        xi = x.clone().requires_grad_(True)
        y = layer(xi)
        (y * y).sum().backward()
        outs.append([y.detach(), xi.grad] +
                    [p.grad for p in layer.parameters()])
    same = all(torch.equal(u, v) for u, v in zip(*outs))
    ok &= same
    say("rank %d: device_mesh and process_group layers: %s"
          % (rank, "bitwise equal" if same else "FAIL"))
    # The optimizer of layer a (its gradients from above) on the layers'
    # group (process_group= in Muon's signature): its step runs over it.
    before = [p.detach().clone() for p in a.parameters()]
    opt = mt.Muon(a.named_parameters(), process_group=mesh.get_group())
    opt.step()
    same = all(bool(torch.isfinite(p).all()) and not torch.equal(p, q)
               for p, q in zip(a.parameters(), before))
    ok &= same
    say("rank %d: Muon(process_group=) on the layers' group: %s"
        % (rank, "stepped" if same else "FAIL"))
    other = dist.new_group([0, 1])
    for what, kw in (("another group", {"process_group": other}),
                     ("both", {"process_group": other,
                               "device_mesh": mesh})):
        try:
            mt.MoE(H, F, E, K, ep=2, max_tokens=32, **kw)
            say("rank %d: %s: FAIL (accepted)" % (rank, what))
            ok = False
        except ValueError as e:
            say("rank %d: %s: %s" % (rank, what, e))
    for what, kw in (("mesh ep", {"ep": 1, "device_mesh": mesh}),
                     ("ep over experts", {"ep": 8})):
        try:
            mt.MoE(H, F, E, K, max_tokens=32, **kw)
            say("rank %d: %s: FAIL (accepted)" % (rank, what))
            ok = False
        except ValueError as e:
            say("rank %d: %s: %s" % (rank, what, e))
    dist.destroy_process_group()
    say("torch-torchrun rank %d: %s" % (rank, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
