//===- MuirMoEOps.td - the muir dialect's MoE layer ops ----*- tablegen -*-===//
//
// Routing, capacity, the grouped products, the SwiGLU and its gradient, the
// loss and the routing's gradient: the ops an MoE layer's passes are built
// from. Included by MuirOps.td where the section stands (after the types
// and Muir_Op it uses); dispatch and combine are collectives there.
//
//===----------------------------------------------------------------------===//
#ifndef MUIR_MOE_OPS_TD
#define MUIR_MOE_OPS_TD

def Muir_RouteOp : Muir_Op<"route", [Pure, AttrSizedOperandSegments]> {
  let summary = "top-k expert routing of tokens";
  let description = [{
    Router logits [T, E] (T tokens, E experts) become, per token, the
    indices [T, K] of its `top_k` = K experts (in decreasing score order;
    ties go to the lower expert index, so routing is deterministic), their
    weights [T, K], and the tokens-per-expert counts [E]:

    ```
    s = softmax(logits) over E        (scoring = softmax)
      | sigmoid(logits)                 (scoring = sigmoid)
    selection score = s + bias          (bias [E], selection only)
    n_group > 1: experts form n_group equal groups; a group's score is the
      sum of its two best selection scores (its best, for groups of one);
      only the topk_group best groups' experts compete
    indices = top-K experts by selection score
    weights = s[indices]                (unbiased scores)
      softmax_after_topk: softmax of the K selected logits instead
      normalize:          weights / sum(weights) over the K
      times scaling
    counts[e] = number of (token, k) pairs that chose e
    ```

    `softmax` with `normalize` is Qwen3-MoE's router, `softmax_after_topk`
    Mixtral's, `sigmoid` with `bias`, `n_group`/`topk_group`, `normalize`
    and `scaling` DeepSeek-V3's. Counts are i64 tensors (runtime buffers),
    so later dispatch sizes need no host round trip. Lowered to one
    `muir_exec.route` (runtime `muirrt_route`), which sums in double in a
    fixed order.

    With `tokens` (a run-time count n, 0 <= n <= T: a layer compiled for a
    bound of T rows and called on fewer) only the first n rows are tokens:
    the rows after them get index -1 and weight 0 (dispatch and combine
    skip them) and are not counted.
  }];
  let arguments = (ins Muir_F32Tensor:$logits,
      Optional<Muir_F32Tensor>:$bias, Optional<I64>:$tokens, I64Attr:$top_k,
      DefaultValuedAttr<Muir_RouteScoringAttr, "RouteScoring::softmax">:$scoring,
      UnitAttr:$softmax_after_topk, UnitAttr:$normalize,
      DefaultValuedAttr<I64Attr, "1">:$n_group,
      DefaultValuedAttr<I64Attr, "1">:$topk_group,
      DefaultValuedAttr<F64Attr, "1.0">:$scaling);
  let results = (outs Muir_I64Tensor:$indices, Muir_F32Tensor:$weights,
      Muir_I64Tensor:$counts);
  let assemblyFormat = [{
    $logits (`bias` $bias^)? (`tokens` `(` $tokens^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Muir_CapacityOp : Muir_Op<"capacity", [Pure]> {
  let summary = "drop routed pairs beyond each expert's capacity";
  let description = [{
    Capacity-factor routing (the dropless default is not to use this op):
    the T tokens are taken in blocks of `group_tokens` (0: all T), and in
    each block expert e keeps at most C = ceil(capacity_factor * G * K / E)
    of the (token, slot) pairs that chose it (G tokens a block): with
    `policy` weight the C of highest weight (ties to the earlier token),
    with position the C earliest tokens. A dropped slot gets index -1 and
    weight 0 (dispatch skips it, combine adds nothing for it); the kept
    weights are not renormalised. `counts` [E] are the kept pairs per
    expert. Blocks make the drops independent of how tokens are spread over
    ranks: ranks holding whole blocks drop exactly what one rank holding all
    of them would.

    With `tokens` (a run-time count n <= T, `group_tokens` 0) the block is
    the first n rows: C = ceil(capacity_factor * n * K / E), and the rows
    after them are dropped.
  }];
  let arguments = (ins Muir_I64Tensor:$indices, Muir_F32Tensor:$weights,
      Optional<I64>:$tokens, I64Attr:$num_experts, F64Attr:$capacity_factor,
      DefaultValuedAttr<Muir_DropPolicyAttr, "DropPolicy::weight">:$policy,
      DefaultValuedAttr<I64Attr, "0">:$group_tokens);
  let results = (outs Muir_I64Tensor:$kept_indices,
      Muir_F32Tensor:$kept_weights, Muir_I64Tensor:$counts);
  let assemblyFormat = [{
    $indices `,` $weights (`tokens` `(` $tokens^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Muir_RenumberOp : Muir_Op<"renumber", [Pure, SameOperandsAndResultType]> {
  let summary = "map expert indices through a permutation";
  let description = [{
    Each element i of `indices` in [0, n) (n the size of `map`) becomes
    map[i]; the others (-1: a dropped slot) stay. `map` is a permutation
    of [0, n).

    The layout-invariant mode's MoE layer spreads its experts' work over
    every rank of its folding: the replicas of an ep stack each take a
    block of its experts. `muir.dispatch` places expert e on group rank
    e / (E / g), its group numbered row-major in grid order; when a replica
    axis comes before ep in that order, the route's indices are renumbered
    so that each expert goes to the rank that computes it.

    ```
    %owners = muir.renumber %indices map = [0, 1, 4, 5, 2, 3, 6, 7]
        : tensor<256x2xi64>
    ```
  }];
  let arguments = (ins Muir_I64Tensor:$indices, DenseI64ArrayAttr:$map);
  let results = (outs Muir_I64Tensor:$result);
  let assemblyFormat = "$indices `map` `=` $map attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Muir_GroupedMatmulOp : Muir_Op<"grouped_matmul", [Pure]> {
  let summary = "per-expert products over ragged groups of rows";
  let description = [{
    `input` [R, K] holds rows in expert-major order: the first sizes[0]
    rows belong to expert 0, the next sizes[1] to expert 1, and so on;
    `weights` [E, K, N] (with `transpose_b`, [E, N, K]: a stack of PyTorch
    Linear weights [out, in]) holds one matrix per expert. Row r of group
    e becomes input[r] * op(weights[e]); rows past the groups' total are
    zero. R is a static bound; a total above it is a run-time error that
    names the expert and the counts. `sizes` [E] is an i64 runtime buffer
    (for example `muir.route`'s counts), not a host list.
    `bf16_operands`: the input and the weights are rounded to bf16 (to
    nearest even) before the products, which accumulate in f32 (a
    torch.autocast(bfloat16) Linear's numerics, the result kept f32; the
    CPU target only).
  }];
  let arguments = (ins Muir_F32Tensor:$input, Muir_F32Tensor:$weights,
      Muir_I64Tensor:$sizes, UnitAttr:$transpose_b, UnitAttr:$bf16_operands);
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $sizes attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Muir_SwigluOp : Muir_Op<"swiglu", [Pure, SameOperandsAndResultType]> {
  let summary = "SwiGLU gating: silu(gate) * up, element-wise";
  let description = [{
    The expert MLP's activation: silu(g) = g / (1 + exp(-g)), times the up
    projection, element by element. With `muir.grouped_matmul` it makes
    the SwiGLU expert MLP: down(swiglu(gate(x), up(x))). Zero rows (past
    the routed total) stay zero.
  }];
  let arguments = (ins Muir_F32Tensor:$gate, Muir_F32Tensor:$up);
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Muir_GroupedMatmulWgradOp : Muir_Op<"grouped_matmul_wgrad", [Pure]> {
  let summary = "weight gradients of a grouped_matmul";
  let description = [{
    For `muir.grouped_matmul %input, %weights, %sizes` with output gradient
    `grad` [R, N]: the gradient of each expert's weight matrix, in the
    weights' layout: input_e^T grad_e [K, N] per expert e (with
    `transpose_b`, grad_e^T input_e [N, K]); zero for an expert with no
    rows. (The input's gradient is a grouped_matmul of `grad` with the
    same weights and `transpose_b` flipped.) `bf16_operands`: as
    `muir.grouped_matmul`'s, for `input` and `grad`.
  }];
  let arguments = (ins Muir_F32Tensor:$input, Muir_F32Tensor:$grad,
      Muir_I64Tensor:$sizes, UnitAttr:$transpose_b, UnitAttr:$bf16_operands);
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `,` $sizes attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Muir_AddOp : Muir_Op<"add", [Pure, SameOperandsAndResultType]> {
  let summary = "element-wise sum of two tensors";
  let description = [{
    lhs + rhs, element by element (for example the input gradient of an
    expert MLP, summed over its gate and up projections).
  }];
  let arguments = (ins Muir_F32Tensor:$lhs, Muir_F32Tensor:$rhs);
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Muir_MseLossOp : Muir_Op<"mse_loss", [Pure,
    AllTypesMatch<["input", "target", "grad"]>]> {
  let summary = "half the scaled squared error, and its gradient";
  let description = [{
    loss = scale / 2 * sum((input - target)^2) (a [1] tensor, summed in
    double in a fixed order) and grad = scale * (input - target). With
    scale = 1 / (tokens over all ranks) and an all_reduce of the loss, the
    mean over tokens of half the squared error of each token's output.
  }];
  let arguments = (ins Muir_F32Tensor:$input, Muir_F32Tensor:$target,
      F64Attr:$scale);
  let results = (outs Muir_F32Tensor:$loss, Muir_F32Tensor:$grad);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` type($input) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Muir_SwigluGradOp : Muir_Op<"swiglu_grad", [Pure,
    AllTypesMatch<["gate", "up", "grad", "gate_grad", "up_grad"]>]> {
  let summary = "gradients of swiglu with respect to gate and up";
  let description = [{
    With s = sigmoid(g): d_up = grad * g * s and d_gate = grad * up * s *
    (1 + g * (1 - s)), element-wise.
  }];
  let arguments = (ins Muir_F32Tensor:$gate, Muir_F32Tensor:$up,
      Muir_F32Tensor:$grad);
  let results = (outs Muir_F32Tensor:$gate_grad, Muir_F32Tensor:$up_grad);
  let assemblyFormat = "$gate `,` $up `,` $grad attr-dict `:` type($gate)";
}

def Muir_RouteGradOp : Muir_Op<"route_grad", [Pure]> {
  let summary = "gradient of route's weights with respect to the logits";
  let description = [{
    For a `muir.route` with the same scoring attributes that chose
    `indices` (route's own, before any `muir.capacity` drops: the kept
    weights still depend on the dropped slots' scores, whose weight
    gradients are 0): the logits' gradient [T, E] from the weights'
    gradient [T, K], in double per token. The selection (bias, expert groups) has
    no gradient; the weights are differentiated through the scaling, the
    normalisation and the scoring (softmax over all experts, sigmoid, or
    softmax over the K selected). With `tokens` (as route's), the rows
    after the first n get a zero gradient.
  }];
  let arguments = (ins Muir_F32Tensor:$logits, Muir_I64Tensor:$indices,
      Muir_F32Tensor:$weights_grad, Optional<I64>:$tokens,
      DefaultValuedAttr<Muir_RouteScoringAttr, "RouteScoring::softmax">:$scoring,
      UnitAttr:$softmax_after_topk, UnitAttr:$normalize,
      DefaultValuedAttr<F64Attr, "1.0">:$scaling);
  let results = (outs Muir_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $indices `,` $weights_grad (`tokens` `(` $tokens^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MUIR_MOE_OPS_TD
