"""muir.torch.Muon updates in place: every parameter keeps its storage
(p.data_ptr()), every state tensor keeps its storage from the step that
created it, gradients are read and left as they were, and parameters do
change. Gradients are replaced every step (zero_grad(set_to_none=True)),
then zeroed in place (set_to_none=False): both are followed.
"""
import torch

import muir.torch
import torchtest as tt

fail = tt.Failures("torch-inplace")
model = tt.make_model()
params = dict(model.named_parameters())
ptr0 = {n: p.data_ptr() for n, p in params.items()}
opt = muir.torch.Muon(model.named_parameters(), lr=0.02, weight_decay=0.1)
state_ptr = None
for step in range(1, 7):
    before = {n: p.detach().clone() for n, p in params.items()}
    if step < 6:
        loss = tt.loss_of(model, step)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in params.items()}
        grad_ptr = {n: p.grad.data_ptr() for n, p in params.items()}
        opt.step()
    else:
        # The last step through a closure, as torch optimizers take it.
        def closure():
            opt.zero_grad()
            loss = tt.loss_of(model, step)
            loss.backward()
            closure.grads = {n: p.grad.detach().clone()
                             for n, p in params.items()}
            closure.ptr = {n: p.grad.data_ptr() for n, p in params.items()}
            return loss
        loss = opt.step(closure)
        grads, grad_ptr = closure.grads, closure.ptr
        fail.check(loss is not None and loss.requires_grad,
                   "step(closure) did not return the closure's loss")
    for n, p in params.items():
        fail.check(p.data_ptr() == ptr0[n], "step %d: %s moved" % (step, n))
        fail.check(not torch.equal(p.detach(), before[n]),
                   "step %d: %s did not change" % (step, n))
        fail.check(torch.equal(p.grad, grads[n]),
                   "step %d: the gradient of %s changed" % (step, n))
        fail.check(p.grad.data_ptr() == grad_ptr[n],
                   "step %d: the gradient of %s moved" % (step, n))
    ptrs = {(n, k): v.data_ptr() for n, p in params.items()
            for k, v in opt.state[p].items() if isinstance(v, torch.Tensor)}
    if state_ptr is None:
        state_ptr = ptrs
        print("state tensors: %d" % len(ptrs))
    else:
        fail.check(ptrs == state_ptr, "step %d: state tensors moved: %s" % (
            step, sorted(k for k in ptrs if ptrs[k] != state_ptr.get(k))))
    opt.zero_grad(set_to_none=step <= 3)
    print("step %d loss %.5f" % (step, float(loss)))
print("%d parameters updated in place over 6 steps" % len(params))
fail.finish()
