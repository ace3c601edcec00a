"""Independent float64 reference for muir's optimizer ops.

Written from the math in the op descriptions (dialects/Muir/MuirOps.td) and
the published coefficient schedules, not from the compiler's lowering. Every
function takes array-likes (typically the float32 inputs handed to muir-run),
promotes them to float64 and computes in float64 throughout.
"""
import numpy as np

# --------------------------------------------------------------------------
# Newton-Schulz coefficient schedules
# --------------------------------------------------------------------------

# Keller Jordan's Muon quintic, the same triple at every step.
SIMPLE = [(3.4445, -4.7750, 2.0315)]

# Per-step quintic schedule; the last triple repeats past the end.
QUINTIC = [
    (4.0848, -6.8946, 2.9270),
    (3.9505, -6.3029, 2.6377),
    (3.7418, -5.5913, 2.3037),
    (2.8769, -3.1427, 1.2046),
    (2.8366, -3.0525, 1.2012),
]

# Polar Express (Amsel et al., 2025); the last triple repeats past the end.
POLAR_EXPRESS = [
    (8.2051, -22.9019, 16.4607),
    (4.0664, -2.8612, 0.5184),
    (3.9096, -2.8234, 0.5250),
    (3.2856, -2.4153, 0.4853),
    (2.2779, -1.6198, 0.3985),
    (1.8726, -1.2307, 0.3585),
    (1.8564, -1.2132, 0.3568),
    (1.875, -1.25, 0.375),
]

# DeepSeek-V4's: eight steps of SIMPLE's triple, then two of (2, -1.5, 0.5);
# the last repeats past the end.
DEEPSEEKV4 = [(3.4445, -4.7750, 2.0315)] * 8 + [(2.0, -1.5, 0.5)] * 2

# NVIDIA Emerging-Optimizers' five cubic steps (c = 0); the last repeats.
CUBIC5 = [
    (3.3656576, -3.3420992, 0.0),
    (2.5744352, -1.4957376, 0.0),
    (2.5368962, -1.4312570, 0.0),
    (2.4418906, -1.2764040, 0.0),
    (2.2230472, -0.9630650, 0.0),
]

SCHEDULES = {
    "simple": SIMPLE,
    "quintic": QUINTIC,
    "polar_express": POLAR_EXPRESS,
    "deepseekv4": DEEPSEEKV4,
    "cubic5": CUBIC5,
}


def step_coefficients(schedule, steps, coefficients=None):
    """The (a, b, c) triple of each of `steps` iterations."""
    if schedule == "custom":
        if coefficients is None or len(coefficients) == 0 or len(coefficients) % 3:
            raise ValueError("custom schedule needs a flat list a0,b0,c0,...")
        table = [tuple(coefficients[i:i + 3])
                 for i in range(0, len(coefficients), 3)]
    else:
        table = SCHEDULES[schedule]
    return [table[min(k, len(table) - 1)] for k in range(steps)]


def _ns_matrix(x, coeffs, eps, rounding):
    x = np.array(x, dtype=np.float64)
    x = x / (np.sqrt(np.sum(x * x)) + eps)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = rounding(x)
    for a, b, c in coeffs:
        A = rounding(x @ x.T)
        B = rounding(b * A + c * (A @ A))
        x = rounding(a * x + B @ x)
    if tall:
        x = x.T
    return x


def newton_schulz(x, steps, schedule="simple", coefficients=None, eps=1e-7,
                  rounding=lambda v: v):
    """muir.newton_schulz in float64; 2-D, or 3-D as a stack of matrices.
    `rounding` is applied to X after the normalisation and to the result
    of each product (a bf16 iterate's roundings; none by default)."""
    x = np.asarray(x, dtype=np.float64)
    coeffs = step_coefficients(schedule, steps, coefficients)
    if x.ndim == 2:
        return _ns_matrix(x, coeffs, eps, rounding)
    if x.ndim == 3:
        return np.stack([_ns_matrix(x[i], coeffs, eps, rounding)
                         for i in range(x.shape[0])])
    raise ValueError("newton_schulz wants a 2-D or 3-D array")


def ns_scalar_map(sigma, steps, schedule="simple", coefficients=None):
    """What NS does to one singular value already in (0, 1]: the composed
    odd polynomial p(s) = a s + b s^3 + c s^5, in float64."""
    s = np.array(sigma, dtype=np.float64)
    for a, b, c in step_coefficients(schedule, steps, coefficients):
        s = a * s + b * s ** 3 + c * s ** 5
    return s


# --------------------------------------------------------------------------
# Muon
# --------------------------------------------------------------------------

def muon_scale(m, n, scale_mode="spectral", scale_extra=0.2):
    if scale_mode == "spectral":
        return scale_extra * np.sqrt(max(m, n))
    if scale_mode == "shape":
        return np.sqrt(max(1.0, m / n))
    if scale_mode == "unit_rms":
        return np.sqrt(m / n)
    raise ValueError("unknown scale_mode %r" % scale_mode)


def muon_update(param, grad, momentum, lr, beta=0.95, momentum_kind="ema",
                nesterov=True, weight_decay=0.0, scale_mode="spectral",
                scale_extra=0.2, ns_steps=5, schedule="simple",
                coefficients=None, eps=1e-7):
    """One muir.muon_update step in float64; returns (param', momentum')."""
    W = np.asarray(param, dtype=np.float64)
    G = np.asarray(grad, dtype=np.float64)
    M = np.asarray(momentum, dtype=np.float64)
    if momentum_kind == "ema":
        M1 = beta * M + (1.0 - beta) * G
        U = (1.0 - beta) * G + beta * M1 if nesterov else M1
    elif momentum_kind == "accumulate":
        M1 = beta * M + G
        U = G + beta * M1 if nesterov else M1
    else:
        raise ValueError("unknown momentum_kind %r" % momentum_kind)
    O = newton_schulz(U, ns_steps, schedule, coefficients, eps)
    m, n = W.shape[-2], W.shape[-1]
    scale = muon_scale(m, n, scale_mode, scale_extra)
    W1 = W * (1.0 - lr * weight_decay) - lr * scale * O
    return W1, M1


def normuon_update(param, grad, momentum, variance, lr, beta=0.95,
                   weight_decay=0.0, beta2=0.95, eps2=1e-8, ns_steps=5,
                   schedule="simple", nesterov=True, scale_extra=0.2):
    """One NorMuon step in float64 (issue 39's formulas; each matrix of a
    stack alone): Muon's momentum (ema) and Newton-Schulz O, then
        v' = beta2 v + (1 - beta2) mean over columns of O * O
        P  = O / (sqrt(v') + eps2), scaled to RMS scale_extra
        W' = W (1 - lr weight_decay) - lr P
    returns (param', momentum', variance')."""
    W = np.asarray(param, dtype=np.float64)
    G = np.asarray(grad, dtype=np.float64)
    M = np.asarray(momentum, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    M1 = beta * M + (1.0 - beta) * G
    U = (1.0 - beta) * G + beta * M1 if nesterov else M1
    O = newton_schulz(U, ns_steps, schedule)
    m, n = W.shape[-2], W.shape[-1]
    v1 = beta2 * v + (1.0 - beta2) * np.mean(O * O, axis=-1)
    P = O / (np.sqrt(v1)[..., None] + eps2)
    norm = np.sqrt(np.sum(P * P, axis=(-2, -1), keepdims=True))
    P = P * (scale_extra * np.sqrt(m * n) / norm)
    return W * (1.0 - lr * weight_decay) - lr * P, M1, v1


def qk_clip(q, k, max_logits, tau, heads, kv_heads):
    """MuonClip's QK-clip (issue 39's formulas) in float64, applied to q
    [heads * d, n] and k [kv_heads * d_k, n] after their update: with
    gamma_h = min(1, tau / max_logits_h) (1 for a logit <= tau), the rows of
    query head h times sqrt(gamma_h), those of kv head g times
    sqrt(min of gamma_h over its heads / kv_heads consecutive query heads).
    Returns (q', k')."""
    x = np.asarray(max_logits, dtype=np.float64)
    gamma = np.where(x > tau, tau / np.where(x > tau, x, 1.0), 1.0)
    group = gamma.reshape(kv_heads, heads // kv_heads).min(axis=1)
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    q1 = q * np.repeat(np.sqrt(gamma), q.shape[0] // heads)[:, None]
    k1 = k * np.repeat(np.sqrt(group), k.shape[0] // kv_heads)[:, None]
    return q1, k1


def normuon_clip_steps(tensors, names, steps, settings, block):
    """`steps` NorMuon steps (normuon_update, each parameter's gradient
    the same every step) of the parameters `names`, from `tensors` (a dict
    with <name>, <name>.grad, <name>.momentum, <name>.variance), MuonClip's
    QK-clip of one attention block after each step: `block` is (q, k,
    max_logits, tau, heads, kv_heads). Returns {name: (W, M, v)}."""
    q, k, logits, tau, heads, kv_heads = block
    out = {n: (tensors[n], tensors[n + ".momentum"], tensors[n + ".variance"])
           for n in names}
    for _ in range(steps):
        for n in names:
            W, M, v = out[n]
            out[n] = normuon_update(W, tensors[n + ".grad"], M, v, **settings)
        wq, wk = qk_clip(out[q][0], out[k][0], logits, tau, heads, kv_heads)
        out[q] = (wq,) + out[q][1:]
        out[k] = (wk,) + out[k][1:]
    return out


# --------------------------------------------------------------------------
# AdamW
# --------------------------------------------------------------------------

def adamw_update(param, grad, exp_avg, exp_avg_sq, step, lr, beta1=0.9,
                 beta2=0.999, eps=1e-8, weight_decay=0.0):
    """One muir.adamw_update step (t = step, 1-based) in float64; returns
    (param', exp_avg', exp_avg_sq')."""
    if step < 1:
        raise ValueError("step is 1-based")
    W = np.asarray(param, dtype=np.float64)
    g = np.asarray(grad, dtype=np.float64)
    m = np.asarray(exp_avg, dtype=np.float64)
    v = np.asarray(exp_avg_sq, dtype=np.float64)
    m1 = beta1 * m + (1.0 - beta1) * g
    v1 = beta2 * v + (1.0 - beta2) * g * g
    mhat = m1 / (1.0 - beta1 ** step)
    vhat = v1 / (1.0 - beta2 ** step)
    W1 = W * (1.0 - lr * weight_decay) - lr * mhat / (np.sqrt(vhat) + eps)
    return W1, m1, v1


# --------------------------------------------------------------------------
# Comparison helpers
# --------------------------------------------------------------------------

def rel_fro(x, ref):
    """||x - ref||_F / ||ref||_F in float64 (over the whole array)."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm((x - ref).ravel()) / np.linalg.norm(ref.ravel()))


def rel_fro_per_matrix(x, ref):
    """Worst relative Frobenius error over the matrices of a 2-D/3-D array."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if x.ndim == 2:
        return rel_fro(x, ref)
    return max(rel_fro(x[i], ref[i]) for i in range(x.shape[0]))


def random_orthogonal(rng, n, k=None):
    """The first k columns (default n) of a Haar-distributed n x n
    orthogonal matrix, in float64: the QR factor of an n x k Gaussian with
    its signs fixed (n k^2 work, not n^3)."""
    q, r = np.linalg.qr(rng.standard_normal((n, n if k is None else k)))
    return q * np.sign(np.diag(r))
