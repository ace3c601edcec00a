//===- MuirOps.td - ops of the muir dialect ----------------*- tablegen -*-===//
//
// Grid, optimizer, linear-algebra and collective ops. Tensor semantics
// throughout; `muir-lower-to-exec` turns them into explicit buffers.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_OPS_TD
#define MUIR_OPS_TD

include "Muir/MuirDialect.td"
include "Muir/MuirAttrs.td"
include "Muir/MuirInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// muir compiles static shapes only: every buffer is sized at compile time.
def Muir_F32Tensor : StaticShapeTensorOf<[F32]>;
// Products also run in double: the Gram form of Newton-Schulz iterates on
// its small matrices in f64 (see muir-gram-newton-schulz).
def Muir_FloatTensor : StaticShapeTensorOf<[F32, F64]>;
// Products also run on bf16 operands with fp32 accumulation, rounded to
// bf16 on store: a Newton-Schulz iterate of precision bf16.
def Muir_ProductTensor : StaticShapeTensorOf<[F32, F64, BF16]>;
def Muir_I64Tensor : StaticShapeTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Grid
//===----------------------------------------------------------------------===//

def Muir_GridOp : Muir_Op<"grid", [Symbol]> {
  let summary = "a grid of devices with named axes";
  let description = [{
    Declares the devices of a training job as an n-dimensional grid whose
    axes have names. Collectives name axes of a grid; the ranks that take
    part in one are derived from it (all ranks that differ only in the
    named axes). Ranks are numbered row-major, the last axis fastest.

    ```
    muir.grid @world axes = ["dp", "tp"] shape = [2, 4]

        tp=0 tp=1 tp=2 tp=3
    dp=0 r0   r1   r2   r3
    dp=1 r4   r5   r6   r7
    ```

    A module's run has one grid, the one that `folds` no other: its
    devices are the run's ranks. A grid that `folds @world` numbers the
    same ranks (as many) in other axes, row-major too; an MoE layer's
    expert axes are one:

    ```
    muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
    muir.grid @moe axes = ["edp", "ep"] shape = [1, 4] folds @world
    ```

    The runtime numbers a module's grids by their folding index: 0 for the
    run's grid, then 1, 2, ... for the grids that fold it, in the module's
    order.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$shape,
                       OptionalAttr<FlatSymbolRefAttr>:$folds,
                       OptionalAttr<StrAttr>:$sym_visibility);
  let assemblyFormat = [{
    $sym_name `axes` `=` $axes `shape` `=` $shape (`folds` $folds^)?
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Index of the axis called `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name);
    /// Product of the sizes of the given axes (1 for none).
    int64_t getGroupSize(::mlir::ArrayAttr axisNames);
    /// Number of devices in the grid.
    int64_t getNumDevices();
    /// 0 for a grid that folds no other; else 1 + the number of folding
    /// grids before it in the module (the runtime ABI's grid number).
    int64_t getFoldingIndex();
  }];
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

def Muir_MuonUpdateOp : Muir_Op<"muon_update", [Pure,
    DeclareOpInterfaceMethods<Muir_OptimizerUpdateInterface,
                              ["getStateOperands"]>,
    DeclareOpInterfaceMethods<Muir_OrthogonalizedUpdateInterface,
                              ["buildNormalizedUpdate", "getApplyScale"]>,
    AttrSizedOperandSegments, AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                   "new_momentum_buffer"]>]> {
  let summary = "one Muon step for a matrix or a stack of matrices";
  let description = [{
    Updates a 2-D parameter W (m x n), or each matrix of a 3-D stack
    [E, m, n] (experts: Newton-Schulz per matrix), from its gradient G and
    momentum buffer M:

    ```
    M' = beta * M + (1 - beta) * G      (momentum_kind = ema)
    M' = beta * M + G                   (momentum_kind = accumulate)
    U  = nesterov ? (1 - beta) * G + beta * M'  (ema)
                  | G + beta * M'               (accumulate)
                  : M'
    O  = NewtonSchulz(U)                (steps, schedule, coefficients, eps)
    W' = W * (1 - lr * weight_decay) - lr * scale * O
    ```

    `scale` depends on `scale_mode`: `spectral` = scale_extra * sqrt(max(m, n))
    (scale_extra defaults to 0.2, matching AdamW's update RMS), `shape` =
    sqrt(max(1, m / n)), `unit_rms` = sqrt(m / n). Weight decay is decoupled.
    `row_blocks` (2-D only) splits the rows into blocks that are
    orthogonalised and scaled separately, e.g. the Q, K and V parts (or the
    head groups) of a fused QKV weight; the momentum stays whole.

    `muir-decompose-optimizers` expands the op into `muir.momentum`,
    `muir.newton_schulz` and `muir.apply_update` (per row block, joined
    with `tensor.concat`).

    Run-time hyperparameters: with `hyper(%lr, %wd)` or `hyper(%lr, %wd,
    %beta)` (f64 scalars, typically arguments of the step with `muir.role =
    "hyper"`) the learning rate, the weight decay and (the third) the
    momentum are read when the step runs, and the `lr`, `weight_decay` and
    `beta` attributes are only the defaults a runner passes when the caller
    gives none.

    Taking part at run time: with `take(%t)` (an i1, typically from the
    step's `<name>.take` argument) a false %t leaves the parameter and its
    momentum buffer as they are, bit for bit (W' = W, M' = M): the step
    skips a parameter without a gradient this time without being compiled
    again.
  }];
  let arguments = (ins Muir_FloatTensor:$param, Muir_FloatTensor:$grad,
      Muir_FloatTensor:$momentum_buffer, Variadic<F64>:$hyper,
      Optional<I1>:$take,
      F64Attr:$lr,
      DefaultValuedAttr<F64Attr, "0.95">:$beta,
      DefaultValuedAttr<Muir_MomentumKindAttr, "MomentumKind::ema">:$momentum_kind,
      DefaultValuedAttr<BoolAttr, "true">:$nesterov,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
      DefaultValuedAttr<Muir_ScaleModeAttr, "ScaleMode::spectral">:$scale_mode,
      DefaultValuedAttr<F64Attr, "0.2">:$scale_extra,
      DefaultValuedAttr<I64Attr, "5">:$ns_steps,
      DefaultValuedAttr<Muir_NSScheduleAttr, "NSSchedule::simple">:$schedule,
      OptionalAttr<DenseF64ArrayAttr>:$coefficients,
      DefaultValuedAttr<F64Attr, "1.0e-7">:$eps,
      OptionalAttr<DenseI64ArrayAttr>:$row_blocks);
  let results = (outs Muir_FloatTensor:$new_param,
                      Muir_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer (`hyper` `(` $hyper^ `)`)?
    (`take` `(` $take^ `)`)? attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Muir_AdamWUpdateOp : Muir_Op<"adamw_update", [Pure,
    DeclareOpInterfaceMethods<Muir_OptimizerUpdateInterface,
                              ["getStateOperands", "isElementwise"]>,
    AttrSizedOperandSegments, AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one AdamW step (decoupled weight decay)";
  let description = [{
    For parameters Muon does not take (embeddings, head, norms, biases).
    With t = `step` (1-based):

    ```
    m' = beta1 * m + (1 - beta1) * g
    v' = beta2 * v + (1 - beta2) * g * g
    W' = W * (1 - lr * weight_decay)
         - lr * (m' / (1 - beta1^t)) / (sqrt(v' / (1 - beta2^t)) + eps)
    ```

    With `hyper(%lr, %wd)` the learning rate and weight decay are read at
    run time (as for `muir.muon_update`), with `hyper(%lr, %wd, %beta1,
    %beta2, %eps)` all five; the attributes are the defaults. With
    `take(%t)` a false %t leaves W, m and v as they are, bit for bit (as
    for `muir.muon_update`).
  }];
  let arguments = (ins Muir_FloatTensor:$param, Muir_FloatTensor:$grad,
      Muir_FloatTensor:$exp_avg, Muir_FloatTensor:$exp_avg_sq, I64:$step,
      Variadic<F64>:$hyper, Optional<I1>:$take,
      F64Attr:$lr,
      DefaultValuedAttr<F64Attr, "0.9">:$beta1,
      DefaultValuedAttr<F64Attr, "0.999">:$beta2,
      DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Muir_FloatTensor:$new_param, Muir_FloatTensor:$new_exp_avg,
                      Muir_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `step` $step
    (`hyper` `(` $hyper^ `)`)? (`take` `(` $take^ `)`)? attr-dict `:`
    type($param)
  }];
  let hasVerifier = 1;
}

def Muir_NorMuonUpdateOp : Muir_Op<"normuon_update", [Pure,
    DeclareOpInterfaceMethods<Muir_OptimizerUpdateInterface,
                              ["getStateOperands"]>,
    DeclareOpInterfaceMethods<Muir_OrthogonalizedUpdateInterface,
                              ["buildNormalizedUpdate", "getApplyScale"]>,
    AttrSizedOperandSegments, AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                   "new_momentum_buffer"]>, AllTypesMatch<["variance", "new_variance"]>]> {
  let summary = "one NorMuon step: Muon with per-row second moments";
  let description = [{
    Muon (`muir.muon_update`: the same momentum, Nesterov look-ahead and
    Newton-Schulz) followed by a per-row normalisation of the orthogonalised
    update O with a running second moment v of its rows. For W [m, n] (each
    matrix of a stack [E, m, n] alone, v [E, m]):

    ```
    O  = NewtonSchulz(U)                 (U as muir.muon_update's)
    v' = beta2 * v + (1 - beta2) * mean over columns of O * O     (v: [m])
    P  = O / (sqrt(v') + eps2)           (row i by its own v'_i)
    P  = P * (scale_extra * sqrt(m * n) / ||P||_F)   (update RMS scale_extra)
    W' = W * (1 - lr * weight_decay) - lr * P
    ```

    `scale_extra` is the update's RMS (0.2 by default, AdamW's). With
    `hyper(%lr, %wd)` or `hyper(%lr, %wd, %beta)` the learning rate, the
    weight decay and the momentum are read at run time (as for
    `muir.muon_update`); beta2 and eps2 are the attributes. With `take(%t)`
    a false %t leaves W, M and v as they are, bit for bit.

    `muir-decompose-optimizers` expands the op into `muir.momentum`,
    `muir.newton_schulz`, `muir.row_sum_squares`, `muir.normuon_normalize`,
    `muir.sum_squares`, `muir.scale_by_norm` and `muir.apply_update`.
  }];
  let arguments = (ins Muir_FloatTensor:$param, Muir_FloatTensor:$grad,
      Muir_FloatTensor:$momentum_buffer, Muir_FloatTensor:$variance,
      Variadic<F64>:$hyper, Optional<I1>:$take,
      F64Attr:$lr,
      DefaultValuedAttr<F64Attr, "0.95">:$beta,
      DefaultValuedAttr<Muir_MomentumKindAttr, "MomentumKind::ema">:$momentum_kind,
      DefaultValuedAttr<BoolAttr, "true">:$nesterov,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
      DefaultValuedAttr<F64Attr, "0.2">:$scale_extra,
      DefaultValuedAttr<I64Attr, "5">:$ns_steps,
      DefaultValuedAttr<Muir_NSScheduleAttr, "NSSchedule::simple">:$schedule,
      OptionalAttr<DenseF64ArrayAttr>:$coefficients,
      DefaultValuedAttr<F64Attr, "1.0e-7">:$eps,
      DefaultValuedAttr<F64Attr, "0.95">:$beta2,
      DefaultValuedAttr<F64Attr, "1.0e-8">:$eps2);
  let results = (outs Muir_FloatTensor:$new_param,
                      Muir_FloatTensor:$new_momentum_buffer,
                      Muir_FloatTensor:$new_variance);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $variance
    (`hyper` `(` $hyper^ `)`)? (`take` `(` $take^ `)`)? attr-dict `:`
    type($param) `,` type($variance)
  }];
  let hasVerifier = 1;
}

def Muir_RowSumSquaresOp : Muir_Op<"row_sum_squares", [Pure]> {
  let summary = "sum of squares of each row of each matrix";
  let description = [{
    For a matrix [m, n] the result [m] holds the sum over the columns of the
    squares of each row (in the element type, columns in order); for a stack [B, m, n]
    the result is [B, m]. With an all_reduce over the axes that split the
    columns it gives the rows' sums of the whole matrix (NorMuon).
  }];
  let arguments = (ins Muir_FloatTensor:$input);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Muir_NorMuonNormalizeOp : Muir_Op<"normuon_normalize", [Pure,
    AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["row_sums", "variance", "new_variance"]>]> {
  let summary = "NorMuon's per-row second moment and normalisation";
  let description = [{
    From O (a matrix [m, n] or a stack [B, m, n]), the sums of squares of
    its rows s ([m] or [B, m], over all `columns` columns of the whole
    matrix) and the second moment v:

    ```
    v' = beta2 * v + (1 - beta2) * s / columns
    P  = O / (sqrt(v') + eps2)           (row i by v'_i)
    ```

    With `take(%t)` a false %t gives v' = v (P is then O divided by the old
    moment: finite, and not applied).
  }];
  let arguments = (ins Muir_FloatTensor:$input, Muir_FloatTensor:$row_sums,
      Muir_FloatTensor:$variance, Optional<I1>:$take, I64Attr:$columns,
      F64Attr:$beta2, F64Attr:$eps2);
  let results = (outs Muir_FloatTensor:$result, Muir_FloatTensor:$new_variance);
  let assemblyFormat = [{
    $input `,` $row_sums `,` $variance (`take` `(` $take^ `)`)? attr-dict
    `:` type($input) `,` type($variance)
  }];
  let hasVerifier = 1;
}

def Muir_MomentumOp : Muir_Op<"momentum", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["grad", "momentum_buffer", "update",
                   "new_momentum_buffer"]>]> {
  let summary = "Muon's momentum accumulation and Nesterov look-ahead";
  let description = [{
    The element-wise front of `muir.muon_update`: returns the update U to
    orthogonalise and the new momentum buffer M' (formulas there). With
    `beta(%b)` (an f64 scalar) the momentum is read at run time and the
    `beta` attribute is its default. With `take(%t)` a false %t gives
    U = 0 (a Newton-Schulz of it stays finite and is not applied) and
    M' = M.
  }];
  let arguments = (ins Muir_FloatTensor:$grad, Muir_FloatTensor:$momentum_buffer,
      Optional<F64>:$beta_value, Optional<I1>:$take,
      F64Attr:$beta, Muir_MomentumKindAttr:$momentum_kind, BoolAttr:$nesterov);
  let results = (outs Muir_FloatTensor:$update,
                      Muir_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $grad `,` $momentum_buffer (`beta` `(` $beta_value^ `)`)?
    (`take` `(` $take^ `)`)? attr-dict `:` type($grad)
  }];
  let hasVerifier = 1;
}

def Muir_ApplyUpdateOp : Muir_Op<"apply_update", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["param", "update", "new_param"]>]> {
  let summary = "W' = W * (1 - lr * weight_decay) - lr * scale * U";
  let description = [{
    The element-wise tail of `muir.muon_update`: decoupled weight decay and
    the scaled step along the orthogonalised update U. With `hyper(%lr,
    %wd)` the learning rate and weight decay are read at run time. With
    `take(%t)` a false %t gives W' = W.
  }];
  let arguments = (ins Muir_FloatTensor:$param, Muir_FloatTensor:$update,
      Variadic<F64>:$hyper, Optional<I1>:$take, F64Attr:$lr, F64Attr:$scale, F64Attr:$weight_decay);
  let results = (outs Muir_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $update (`hyper` `(` $hyper^ `)`)? (`take` `(` $take^ `)`)?
    attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Muir_QkClipOp : Muir_Op<"qk_clip", [Pure,
    AllTypesMatch<["param", "result"]>]> {
  let summary = "MuonClip's QK-clip: heads' rows scaled down by their logits";
  let description = [{
    After the update of an attention block's query or key projection W
    [m, n], whose rows are m / head_rows heads of head_rows rows each, from
    the largest pre-softmax logit of each query head in this step's forward
    (`max_logits` [h], f32, h = group * m / head_rows; an f64 W is clipped
    in f64), with tau = `tau`:

    ```
    gamma_i = max_logits_i > tau ? tau / max_logits_i : 1
    s_j     = sqrt(min of gamma_i over i in [j * group, (j + 1) * group))
    W'[r, :] = W[r, :] * s_(r / head_rows)
    ```

    A query projection has `group` = 1 (s_j = sqrt(gamma_j)); a key
    projection of grouped-query attention has `group` = heads / kv_heads,
    the consecutive query heads that share its head j. A head at or under
    tau (or with a NaN logit) keeps its rows bit for bit. With `take(%t)`
    a false %t gives W' = W. Split rows (tensor parallel) are clipped on
    each rank with that rank's heads: `max_logits` is split with W's rows.
  }];
  let arguments = (ins Muir_FloatTensor:$param, Muir_F32Tensor:$max_logits,
      Optional<I1>:$take, F64Attr:$tau, I64Attr:$head_rows, I64Attr:$group);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = [{
    $param `,` $max_logits (`take` `(` $take^ `)`)? attr-dict `:`
    type($param) `,` type($max_logits)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Newton-Schulz and its linear algebra
//===----------------------------------------------------------------------===//

def Muir_NewtonSchulzOp : Muir_Op<"newton_schulz", [Pure,
    SameOperandsAndResultType]> {
  let summary = "orthogonalise a matrix with Newton-Schulz iterations";
  let description = [{
    Approximates the orthogonal polar factor U V^T of X = U S V^T (for a
    3-D operand [B, m, n], of each of the B matrices independently):

    ```
    X <- X / (||X||_F + eps)              (per matrix)
    if m > n: X <- X^T                    (iterate on the wide form)
    repeat `steps` times with the k-th coefficients (a, b, c):
      A = X X^T
      B = b A + c A A
      X = a X + B X
    if m > n: X <- X^T
    ```

    `schedule` names the coefficient triples: `simple` (3.4445, -4.7750,
    2.0315) at every step; `quintic`, `polar_express`, `deepseekv4` (eight
    `simple` steps, then (2, -1.5, 0.5)) and `cubic5` (five cubic steps,
    c = 0) are per-step schedules whose last triple repeats past their
    length; `custom` takes the triples from `coefficients` (a flat list a0,
    b0, c0, a1, ...), whose last triple likewise repeats.

    `precision` is the element type of the iterate X and of the Gram
    matrices A and B: `f32` (the default), or `bf16`, where X is normalised
    in f32, rounded to bf16 (to nearest even), every product takes bf16
    operands, accumulates in f32 and rounds its result to bf16, and the
    result is X widened back to f32 (what PyTorch's Muon does in bf16). A
    bf16 iterate takes the standard form. (A matrix split in the
    distributed or resharded mode is no `muir.newton_schulz` but
    muir-distribute's own iteration, in f32.)
  }];
  let arguments = (ins Muir_FloatTensor:$input, I64Attr:$steps,
      DefaultValuedAttr<Muir_NSScheduleAttr, "NSSchedule::simple">:$schedule,
      OptionalAttr<DenseF64ArrayAttr>:$coefficients,
      DefaultValuedAttr<F64Attr, "1.0e-7">:$eps,
      DefaultValuedAttr<Muir_NSPrecisionAttr, "NSPrecision::f32">:$precision);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = [{
    $input `steps` `(` $steps `)` `schedule` `(` custom<Schedule>($schedule) `)`
    (`coefficients` `(` $coefficients^ `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The coefficient table of the iterations (resolveTable): step k
    /// uses triple min(k, size - 1).
    ::llvm::SmallVector<std::array<double, 3>> getStepTable();
  }];
}

def Muir_FrobeniusNormalizeOp : Muir_Op<"frobenius_normalize", [Pure,
    SameOperandsAndResultType]> {
  let summary = "X / (||X||_F + eps), per matrix";
  let description = [{
    Divides each matrix (the last two dimensions) by its Frobenius norm plus
    `eps`; the norm is accumulated in double in a fixed order.
  }];
  let arguments = (ins Muir_FloatTensor:$input,
                   DefaultValuedAttr<F64Attr, "1.0e-7">:$eps);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Muir_TransposeOp : Muir_Op<"transpose", [Pure]> {
  let summary = "swap the last two dimensions";
  let description = [{
    `[..., m, n] -> [..., n, m]`; leading (batch) dimensions are kept.
  }];
  let arguments = (ins Muir_FloatTensor:$input);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  // transpose(transpose(x)) = x.
  let hasFolder = 1;
}

def Muir_MatmulOp : Muir_Op<"matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "D = alpha * op(A) * op(B) + beta * C";
  let description = [{
    General matrix product on 2-D operands or batched 3-D operands (same
    batch size). op(X) is X or, with `transpose_a` / `transpose_b`, X^T.
    Without the accumulator operand C, beta must be 0. Newton-Schulz uses
    the forms A = X X^T, B = b A + c A A and X' = a X + B X. Operands and
    result are all f32 or all f64. `symmetric` states that the result is
    symmetric (square operands that commute, as polynomials in one
    symmetric matrix do, and a symmetric accumulator): the runtime may
    compute one triangle and mirror it.

    alpha and beta are the attributes, or the f64 operands `alpha` and
    `beta` where they are only known at run time (a Newton-Schulz loop's
    coefficients, read from its table each step); an operand replaces its
    attribute, which must then be left at its default. A `beta` operand
    needs the accumulator.

    `row_stable` (f32, 2-D, no accumulator, alpha 1): every element is the
    sum over k in ascending order of its products, whatever the shapes and
    wherever its row is, so a row's result has the same bits however many
    rows come with it (BLAS rounds differently for another M or row
    position). An MoE layer's products over token rows use it: the same
    bits for a token on any number of expert-parallel ranks and any bound.
    Runs as `muirrt_gemm_rows`, slower than BLAS.
  }];
  let arguments = (ins Muir_ProductTensor:$a, Muir_ProductTensor:$b,
      Optional<Muir_ProductTensor>:$acc,
      Optional<F64>:$alpha_value, Optional<F64>:$beta_value,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$beta,
      UnitAttr:$transpose_a, UnitAttr:$transpose_b, UnitAttr:$symmetric,
      UnitAttr:$row_stable);
  let results = (outs Muir_ProductTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`acc` $acc^)? (`alpha` `(` $alpha_value^ `)`)?
    (`beta` `(` $beta_value^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    // Constant coefficients.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$a,
        "::mlir::Value":$b, "::mlir::Value":$acc, "::mlir::FloatAttr":$alpha,
        "::mlir::FloatAttr":$beta, CArg<"::mlir::UnitAttr", "{}">:$transpose_a,
        CArg<"::mlir::UnitAttr", "{}">:$transpose_b,
        CArg<"::mlir::UnitAttr", "{}">:$symmetric), [{
      build($_builder, $_state, result, a, b, acc, ::mlir::Value(),
            ::mlir::Value(), alpha, beta, transpose_a, transpose_b, symmetric,
            ::mlir::UnitAttr());
    }]>];
  let hasVerifier = 1;
}

def Muir_SyrkOp : Muir_Op<"syrk", [Pure, AttrSizedOperandSegments]> {
  let summary = "symmetric rank-k update C' = alpha * A * A^T + beta * C";
  let description = [{
    A is n x k (or [B, n, k]); the result is the symmetric n x n matrix
    (both triangles). With `transpose`, A is k x n and the product is
    A^T A. Costs about half the flops of the equivalent GEMM. Without the
    accumulator operand C, beta must be 0; C must be symmetric. Operands
    and result are all f32, all f64 or all bf16 (accumulated in f32,
    rounded to bf16), except that an f32 A may give an
    f64 result: the products accumulated in double (the Gram matrix of the
    Gram form of Newton-Schulz). alpha and beta may be f64 operands, as
    for muir.matmul.
  }];
  let arguments = (ins Muir_ProductTensor:$a,
      Optional<Muir_ProductTensor>:$acc,
      Optional<F64>:$alpha_value, Optional<F64>:$beta_value,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha,
      DefaultValuedAttr<F64Attr, "0.0">:$beta, UnitAttr:$transpose);
  let results = (outs Muir_ProductTensor:$result);
  let assemblyFormat = [{
    $a (`acc` $acc^)? (`alpha` `(` $alpha_value^ `)`)?
    (`beta` `(` $beta_value^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$a,
        "::mlir::Value":$acc, "::mlir::FloatAttr":$alpha,
        "::mlir::FloatAttr":$beta, CArg<"::mlir::UnitAttr", "{}">:$transpose), [{
      build($_builder, $_state, result, a, acc, ::mlir::Value(),
            ::mlir::Value(), alpha, beta, transpose);
    }]>];
  let hasVerifier = 1;
}

def Muir_TraceNormalizeOp : Muir_Op<"trace_normalize", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "a Gram matrix normalised as its X would be, and the scale";
  let description = [{
    For each square matrix A = X X^T (f64, the last two dimensions) with
    s = 1 / (sqrt(trace(A)) + eps): `result` = s^2 A, the Gram matrix of
    the Frobenius-normalised X / (||X||_F + eps), and `scale` = s (a [B]
    or [1] vector), the factor X itself takes. The trace is summed in
    order in double.
  }];
  let arguments = (ins StaticShapeTensorOf<[F64]>:$input,
                   DefaultValuedAttr<F64Attr, "1.0e-7">:$eps);
  let results = (outs StaticShapeTensorOf<[F64]>:$result,
                      StaticShapeTensorOf<[F64]>:$scale);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Muir_ScaleMatricesOp : Muir_Op<"scale_matrices", [Pure]> {
  let summary = "each matrix times its own scalar, rounded once";
  let description = [{
    result[b] = scale[b] * input[b] for each matrix (the last two
    dimensions) of an f64 tensor, rounded to the result's element type
    (f32 or f64) once; `scale` is a [B] or [1] f64 vector.
  }];
  let arguments = (ins StaticShapeTensorOf<[F64]>:$input,
                   StaticShapeTensorOf<[F64]>:$scale);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Muir_AddDiagonalOp : Muir_Op<"add_diagonal", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "X + value * I, per matrix";
  let description = [{
    Adds `value` to the diagonal of each square matrix (the last two
    dimensions) of an f32 or f64 tensor: the constant term of a matrix
    polynomial, aI + bA + cA^2 in the Gram form of Newton-Schulz. The value
    is a constant (`muir.add_diagonal %x, 1.5`) or an f64 operand
    (`muir.add_diagonal %x, %a`: a coefficient read at run time).
  }];
  let arguments = (ins Muir_FloatTensor:$input, Optional<F64>:$value_operand,
                   OptionalAttr<F64Attr>:$value);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` custom<Coefficient>($value_operand, $value) attr-dict `:`
    type($input)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::FloatAttr":$value), [{
      build($_builder, $_state, input.getType(), input, ::mlir::Value(),
            value);
    }]>,
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$value), [{
      build($_builder, $_state, input.getType(), input, value,
            ::mlir::FloatAttr());
    }]>];
  let hasVerifier = 1;
}

// The MoE layer's ops (routing, capacity, grouped products, loss and the
// routing's gradient), here in the record order.
include "Muir/MuirMoEOps.td"

def Muir_ProbeOp : Muir_Op<"probe", [MemoryEffects<[MemWrite]>]> {
  let summary = "record a tensor's value for the runtime to report";
  let description = [{
    Copies its operand to the runtime's observation slot `slot`, tagged
    with `label`; muir-run reports metrics of observed tensors (for
    example the orthogonality error of a Newton-Schulz output) after each
    step, outside the timed region. An f64 operand is observed rounded to
    f32 (the report's figures).
  }];
  let arguments = (ins Muir_FloatTensor:$input, StrAttr:$label,
      I64Attr:$slot);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Muir_SumSquaresOp : Muir_Op<"sum_squares", [Pure]> {
  let summary = "sum of squares of each matrix (a [B] or [1] vector)";
  let description = [{
    For a matrix the result has one element, for a stack [B, m, n] one per
    matrix. With an all_reduce over the axes a matrix is split on, it gives
    the squared Frobenius norm of the whole matrix (distributed
    Newton-Schulz). The result's element type is the input's (an f64
    parameter's sums are f64).
  }];
  let arguments = (ins Muir_FloatTensor:$input);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Muir_ScaleByNormOp : Muir_Op<"scale_by_norm", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "X / (sqrt(s) + eps) with s from sum_squares";
  let description = [{
    The second half of a Frobenius normalisation whose sum of squares was
    computed (and possibly all-reduced) separately; the arithmetic is the
    same as `muir.frobenius_normalize`'s.
  }];
  let arguments = (ins Muir_FloatTensor:$input, Muir_FloatTensor:$sum_squares,
                   DefaultValuedAttr<F64Attr, "1.0e-7">:$eps);
  let results = (outs Muir_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $sum_squares attr-dict `:` type($input) `,` type($sum_squares)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class Muir_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Muir_Op<mnemonic, !listconcat(traits,
          [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  dag commonArgs = (ins FlatSymbolRefAttr:$grid, StrArrayAttr:$grid_axes);
  code commonExtraDecl = [{
    /// The grid this collective runs on (valid after verification).
    ::mlir::muir::GridOp getGridOp();
    /// Number of ranks in one group of this collective.
    int64_t getGroupSize();
  }];
  let extraClassDeclaration = commonExtraDecl;
}

def Muir_AllReduceOp : Muir_CollectiveOp<"all_reduce", [Pure,
    SameOperandsAndResultType]> {
  let summary = "element-wise reduction across the ranks of grid axes";
  let description = [{
    Every rank of a group (the ranks that differ only in `grid_axes`)
    receives the element-wise `reduction` (sum, max, min, avg) of the
    group's inputs.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
      DefaultValuedAttr<Muir_ReductionKindAttr, "ReductionKind::sum">:$reduction));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes (`reduction` `=` `` $reduction^)?
    attr-dict `:` type($input)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}

def Muir_SymmetricAllReduceOp : Muir_CollectiveOp<"symmetric_all_reduce",
    [Pure, SameOperandsAndResultType]> {
  let summary = "the group's sum of symmetric f64 matrices, by triangles";
  let description = [{
    Every rank of the group receives the sum of the group's symmetric
    matrices (f64, the last two dimensions square; a stack sums matrix by
    matrix). Only each matrix's packed upper triangle, s (s + 1) / 2
    doubles, travels; the sum runs in group-rank order, so results do not
    depend on timing. The Gram form of distributed Newton-Schulz sends its
    Gram matrix this way once per step.
  }];
  let arguments = !con(commonArgs, (ins StaticShapeTensorOf<[F64]>:$input));
  let results = (outs StaticShapeTensorOf<[F64]>:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  // A group of one rank: the input.
  let hasFolder = 1;
}

def Muir_AllGatherOp : Muir_CollectiveOp<"all_gather", [Pure]> {
  let summary = "concatenate the group's shards along a tensor dimension";
  let description = [{
    Each rank contributes a shard; every rank receives the shards
    concatenated along `gather_axis` in group-rank order, so that
    dimension grows by the group size (product of the axes' sizes).
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
                                        I64Attr:$gather_axis));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `gather_axis` `=` $gather_axis
    attr-dict `:` type($input) `->` type($result)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}

def Muir_AllGatherVOp : Muir_CollectiveOp<"all_gatherv", [Pure]> {
  let summary = "ragged all-gather: shards of different sizes";
  let description = [{
    Like `all_gather`, but group rank r contributes `sizes[r]` slices along
    `gather_axis` (its input is padded to the largest size; the padding is
    not sent). The result holds sum(sizes) slices in group-rank order. Used
    by the layer-wise distributed optimizer to bring every rank the
    updates computed elsewhere.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
                       I64Attr:$gather_axis, DenseI64ArrayAttr:$sizes));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `gather_axis` `=` $gather_axis
    `sizes` `=` $sizes attr-dict `:` type($input) `->` type($result)
  }];
}

def Muir_ReduceScatterOp : Muir_CollectiveOp<"reduce_scatter", [Pure]> {
  let summary = "reduce across the group, each rank keeps one slice";
  let description = [{
    The group's inputs are reduced element-wise; group rank r keeps the
    r-th of `group size` equal slices along `scatter_axis`.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
      I64Attr:$scatter_axis,
      DefaultValuedAttr<Muir_ReductionKindAttr, "ReductionKind::sum">:$reduction));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `scatter_axis` `=` $scatter_axis
    (`reduction` `=` `` $reduction^)? attr-dict `:` type($input) `->`
    type($result)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}

def Muir_AllToAllOp : Muir_CollectiveOp<"all_to_all", [Pure]> {
  let summary = "split along one dimension, exchange, concatenate along another";
  let description = [{
    Each rank splits its input into `group size` equal slices along
    `split_axis`, sends slice j to group rank j, and concatenates what it
    receives along `concat_axis` in group-rank order.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
      I64Attr:$split_axis, I64Attr:$concat_axis));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `split_axis` `=` $split_axis
    `concat_axis` `=` $concat_axis attr-dict `:` type($input) `->`
    type($result)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}

def Muir_AllToAllVOp : Muir_CollectiveOp<"all_to_allv", [Pure]> {
  let summary = "ragged all-to-all of rows with run-time counts";
  let description = [{
    Rank r sends `send_counts[j]` consecutive rows (dimension 0) of its input
    to group rank j, in order. The output's first dimension is a static
    upper bound; `recv_counts[j]` says how many rows arrived from group rank
    j, packed from row 0 in group-rank order. Counts live in tensors, not in
    attributes, because routing decides them at run time.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
                       RankedTensorOf<[I64]>:$send_counts));
  let results = (outs Muir_F32Tensor:$result,
                      RankedTensorOf<[I64]>:$recv_counts);
  let assemblyFormat = [{
    $input `,` $send_counts `on` $grid `axes` `=` $grid_axes attr-dict `:`
    functional-type(operands, results)
  }];
}

def Muir_GroupRankOp : Muir_CollectiveOp<"group_rank", [Pure]> {
  let summary = "this rank's index in its group over grid axes";
  let description = [{
    The row-major index of this rank's coordinates over `grid_axes`, in
    [0, group size). Rank-dependent work (each data-parallel rank
    orthogonalising the matrices assigned to it) switches on it with
    `scf.index_switch`; no communication.
  }];
  let arguments = commonArgs;
  let results = (outs Index:$rank);
  let assemblyFormat = [{
    `on` $grid `axes` `=` $grid_axes attr-dict `:` type($rank)
  }];
  // A group of one rank: 0.
  let hasCanonicalizer = 1;
}

def Muir_SyrkAllReduceOp : Muir_CollectiveOp<"syrk_all_reduce", [Pure]> {
  let summary = "the group's sum of alpha * A A^T, carrying only triangles";
  let description = [{
    `muir.all_reduce` (sum) of `muir.syrk`, fused: each rank forms its
    symmetric product (A^T A with `transpose`), and only the packed upper
    triangle, s (s + 1) / 2 values instead of s^2, travels, in chunks of
    `chunk_rows` rows (0: one chunk): each chunk's rows are computed and
    their exchange started before the previous chunk's is finished, so
    exchanges hide behind the next chunk's product (lowered to
    `muir_exec.syrk_rows` and `triangle_all_reduce_start`/`_wait`). Sums
    run in group-rank order as `all_reduce`'s; a chunk's entries come from a
    SYRK of its diagonal block and a GEMM right of it, exact wherever the
    whole SYRK is exact (integer-valued inputs), else within fp32 rounding
    of it (one chunk: the same SYRK call, bitwise).
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$a,
      DefaultValuedAttr<F64Attr, "1.0">:$alpha, UnitAttr:$transpose,
      DefaultValuedAttr<I64Attr, "0">:$chunk_rows));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $a `on` $grid `axes` `=` $grid_axes attr-dict `:` type($a) `->`
    type($result)
  }];
  // A group of one rank: muir.syrk.
  let hasCanonicalizer = 1;
}

def Muir_DispatchOp : Muir_CollectiveOp<"dispatch", [Pure]> {
  let summary = "send routed tokens to the ranks holding their experts";
  let description = [{
    Expert-parallel dispatch over the group of `grid_axes` (g ranks, or
    this rank alone when `grid_axes` is empty; the
    `num_experts` experts split evenly, expert e on group rank
    e / (num_experts / g)). `input` [T, H] holds this rank's tokens and
    `indices` [T, K] their experts (`muir.route`; -1 marks a dropped slot).

    First the group gathers every rank's pairs per expert and tokens per
    rank (an all-gather of E + g integers), so every rank knows what it
    receives and checks the static bound before any token moves. Then a
    ragged all-to-all sends each token once to each rank holding one of its
    experts (a token with two experts on one rank travels once). The
    receiver expands the tokens into `result` [R, H]: one row per (token,
    slot), expert-major (local expert, then source rank, then token
    order), rows past the total zero; with `weights` [T, K] each row is
    scaled by its slot's weight (the weights travel with the token). R is a
    static bound (dropless: g * T * min(K, E / g)); receiving more stops
    the run on every rank with a message naming `layer`, the rank and the
    rows per expert. `counts` [E / g] are the rows per local expert (the
    sizes of `muir.grouped_matmul`), `plan` [2 R + 4 g] what `muir.combine`
    needs to send rows back.

    With `weights`, dispatch is the transpose of `muir.combine` with
    weights; without, combine without weights is its transpose.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
      Muir_I64Tensor:$indices, Optional<Muir_F32Tensor>:$weights,
      I64Attr:$num_experts, OptionalAttr<StrAttr>:$layer));
  let results = (outs Muir_F32Tensor:$result, Muir_I64Tensor:$counts,
      Muir_I64Tensor:$plan);
  let assemblyFormat = [{
    $input `,` $indices (`weights` $weights^)? `on` $grid `axes` `=`
    $grid_axes attr-dict `:` functional-type(operands, results)
  }];
}

def Muir_CombineOp : Muir_CollectiveOp<"combine", [Pure]> {
  let summary = "bring expert outputs home and sum them per token";
  let description = [{
    The reverse of `muir.dispatch` (same group, experts and `plan`): every
    row of `input` [R, H] returns to its token's rank in a ragged
    all-to-all, and token t's result is the sum over its slots k, in slot
    order, of weights[t, k] * row(t, k) (no `weights`: weight 1), in
    double. The same operations run for any number of ranks, so the result
    is bitwise independent of g. Dropped slots (-1) add nothing.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
      Muir_I64Tensor:$indices, Muir_I64Tensor:$plan,
      Optional<Muir_F32Tensor>:$weights, I64Attr:$num_experts,
      OptionalAttr<StrAttr>:$layer));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `,` $plan (`weights` $weights^)? `on` $grid `axes`
    `=` $grid_axes attr-dict `:` functional-type(operands, results)
  }];
}

def Muir_CombineWeightsGradOp
    : Muir_CollectiveOp<"combine_weights_grad", [Pure]> {
  let summary = "gradient of combine with respect to its weights";
  let description = [{
    For `muir.combine %input, %indices, %plan weights %w` with output
    gradient `grad` [T, H]: d w[t, k] = <grad[t], row(t, k)>. `grad`
    travels as the tokens did (once per rank), the dot products (double)
    are formed where the rows are, and one float per pair comes back.
    Dropped slots get 0. (The rows' gradient is `muir.dispatch` of `grad`
    with the weights.)
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$grad,
      Muir_F32Tensor:$input, Muir_I64Tensor:$indices, Muir_I64Tensor:$plan,
      I64Attr:$num_experts, OptionalAttr<StrAttr>:$layer));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $indices `,` $plan `on` $grid `axes` `=`
    $grid_axes attr-dict `:` functional-type(operands, results)
  }];
}

def Muir_BroadcastOp : Muir_CollectiveOp<"broadcast", [Pure,
    SameOperandsAndResultType]> {
  let summary = "every rank of the group receives the root's tensor";
  let description = [{
    `root` is a group rank in [0, group size).
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
                                        I64Attr:$root));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `root` `=` $root attr-dict `:`
    type($input)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}


def Muir_AllSliceOp : Muir_CollectiveOp<"all_slice", [Pure]> {
  let summary = "keep this rank's block of a replicated tensor";
  let description = [{
    The inverse of `all_gather` without communication: every rank of a group
    holds the same tensor and keeps block r (its group rank) of `group size`
    equal blocks along `slice_axis`. Used after computing on gathered data
    (duplicated Newton-Schulz) to return to the rank's shard.
  }];
  let arguments = !con(commonArgs, (ins Muir_F32Tensor:$input,
                                        I64Attr:$slice_axis));
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `axes` `=` $grid_axes `slice_axis` `=` $slice_axis
    attr-dict `:` type($input) `->` type($result)
  }];
  // A group of one rank: the input.
  let hasFolder = 1;
}

#endif // MUIR_OPS_TD
