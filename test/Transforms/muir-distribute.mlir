// RUN: muir-opt %s --split-input-file --muir-distribute=dp-assign=replicated --verify-diagnostics | FileCheck %s
// The tensor-parallel modes alone: every dp rank runs every Newton-Schulz
// (dp-assign=replicated); muir-distribute-dp.mlir shares them out over dp.

// Duplicated Newton-Schulz for a column-split matrix: local momentum, gather
// the update over tp, orthogonalise the whole 8x4 matrix, keep the own rows;
// the scale is the whole matrix's (0.2 * sqrt(8)). AdamW stays local.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
// CHECK-LABEL: func.func @column
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4x4xf32> {muir.name = "w", muir.shards = [#muir.shard<tp_column, "tp", 0>], muir.split = [#muir.split<@world, ["tp"], 0>]}
// CHECK-SAME: %{{[^:]+}}: tensor<8xf32> {muir.name = "b", muir.shards = [#muir.shard<fsdp, "dp", 0>], muir.split = [#muir.split<@world, ["dp"], 0>]}
// CHECK-SAME: -> (tensor<4x4xf32> {muir.updates = "w"}, tensor<4x4xf32> {muir.updates = "w.momentum"}, tensor<8xf32> {muir.updates = "b"})
// CHECK: %[[U:.+]], %[[M:.+]] = muir.momentum %{{.*}} : tensor<4x4xf32>
// CHECK: %[[G:.+]] = muir.all_gather %[[U]] on @world axes = ["tp"] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[O:.+]] = muir.newton_schulz %[[G]] steps(5) schedule(simple) : tensor<8x4xf32>
// CHECK: %[[S:.+]] = muir.all_slice %[[O]] on @world axes = ["tp"] slice_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[W:.+]] = muir.apply_update %[[P]], %[[S]] {lr = 2.000000e-02 : f64, muir.modelled_ms = {{[0-9.eE+-]+}} : f64, muir.ns_mode = #muir.ns_mode<duplicated>, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, standard, 0.0051 ms, 6.4e-05 MB>, <distributed, standard, {{.*}}>]>, scale = 0.56568542494923{{[0-9]*}} : f64
// CHECK: muir.adamw_update {{.*}} : tensor<8xf32>
// CHECK: return %[[W]], %[[M]]
func.func @column(%w: tensor<8x4xf32> {muir.name = "w", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
                  %g: tensor<8x4xf32> {muir.name = "w.grad", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
                  %m: tensor<8x4xf32> {muir.name = "w.momentum", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
                  %b: tensor<16xf32> {muir.name = "b", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                  %bg: tensor<16xf32> {muir.name = "b.grad", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                  %bm: tensor<16xf32> {muir.name = "b.exp_avg", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                  %bv: tensor<16xf32> {muir.name = "b.exp_avg_sq", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                  %t: i64 {muir.role = #muir.role<step>})
    -> (tensor<8x4xf32> {muir.updates = "w"}, tensor<8x4xf32> {muir.updates = "w.momentum"}, tensor<16xf32> {muir.updates = "b"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<8x4xf32>
  %b1, %bm1, %bv1 = muir.adamw_update %b, %bg, %bm, %bv step %t {lr = 0.001} : tensor<16xf32>
  return %w1, %m1, %b1 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<16xf32>
}

// -----

// Row split (dim 1) plus FSDP (dim 0): gathered in shard order, sliced back
// in reverse.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
// CHECK-LABEL: func.func @row_and_fsdp
// CHECK: %[[G0:.+]] = muir.all_gather %{{.*}} axes = ["tp"] gather_axis = 1 : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK: %[[G1:.+]] = muir.all_gather %[[G0]] on @world axes = ["dp"] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[O:.+]] = muir.newton_schulz %[[G1]]
// CHECK: %[[S0:.+]] = muir.all_slice %[[O]] on @world axes = ["dp"] slice_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: muir.all_slice %[[S0]] on @world axes = ["tp"] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
func.func @row_and_fsdp(%w: tensor<8x8xf32> {muir.name = "w", muir.shards = [#muir.shard<tp_row, "tp", 1>, #muir.shard<fsdp, "dp", 0>]},
                        %g: tensor<8x8xf32> {muir.name = "w.grad", muir.shards = [#muir.shard<tp_row, "tp", 1>, #muir.shard<fsdp, "dp", 0>]},
                        %m: tensor<8x8xf32> {muir.name = "w.momentum", muir.shards = [#muir.shard<tp_row, "tp", 1>, #muir.shard<fsdp, "dp", 0>]})
    -> (tensor<8x8xf32> {muir.updates = "w"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<8x8xf32>
  return %w1 : tensor<8x8xf32>
}

// -----

// Experts split on their own dimension: NS per local expert, nothing to
// communicate; shards on axes of size 1 change nothing.
muir.grid @world axes = ["dp", "ep"] shape = [1, 4]
// CHECK-LABEL: func.func @experts
// CHECK-SAME: tensor<2x16x8xf32> {muir.name = "e", muir.shards = [#muir.shard<expert, "ep", 0>, #muir.shard<fsdp, "dp", 1>], muir.split = [#muir.split<@world, ["ep"], 0>]}
// CHECK-NOT: muir.all_gather
// CHECK: muir.muon_update {{.*}} : tensor<2x16x8xf32>
// CHECK-NOT: muir.all_gather
func.func @experts(%e: tensor<8x16x8xf32> {muir.name = "e", muir.shards = [#muir.shard<expert, "ep", 0>, #muir.shard<fsdp, "dp", 1>]},
                   %g: tensor<8x16x8xf32> {muir.name = "e.grad", muir.shards = [#muir.shard<expert, "ep", 0>]},
                   %m: tensor<8x16x8xf32> {muir.name = "e.momentum", muir.shards = [#muir.shard<expert, "ep", 0>]})
    -> (tensor<8x16x8xf32> {muir.updates = "e"}) {
  %e1, %m1 = muir.muon_update %e, %g, %m {lr = 0.02} : tensor<8x16x8xf32>
  return %e1 : tensor<8x16x8xf32>
}

// -----

// The folding comes first in the module: which grid is the run's is said by
// `folds`, not by the order.
muir.grid @moe axes = ["ep"] shape = [2] folds @world
muir.grid @world axes = ["dp"] shape = [2]
// Shards on another folding (MoE: ep of @moe) are split on that folding,
// its muir.split names @moe; the expert stack keeps NS per local expert.
// CHECK-LABEL: func.func @other_folding
// CHECK-SAME: (%{{[^:]+}}: tensor<4x16x8xf32> {muir.name = "e", muir.shards = [#muir.shard<expert, "ep", 0>], muir.split = [#muir.split<@moe, ["ep"], 0>]}, %{{[^:]+}}: tensor<4xf32> {muir.name = "b", muir.shards = [#muir.shard<fsdp, "dp", 0>], muir.split = [#muir.split<@world, ["dp"], 0>]})
func.func @other_folding(%e: tensor<8x16x8xf32> {muir.name = "e", muir.shards = [#muir.shard<expert, "ep", 0>]},
                         %b: tensor<8xf32> {muir.name = "b", muir.shards = [#muir.shard<fsdp, "dp", 0>]}) {
  return
}

// -----

// expected-note@+1 {{the first grid that folds no other, @world}}
muir.grid @world axes = ["dp"] shape = [2]
// expected-error@+1 {{'muir.grid' op is a second grid that folds no other: a run has one grid, and the others name it with `folds`}}
muir.grid @other axes = ["ep"] shape = [2]
func.func @two_run_grids(%b: tensor<8xf32> {muir.name = "b", muir.shards = [#muir.shard<fsdp, "dp", 0>]}) {
  return
}

// -----

muir.grid @world axes = ["dp"] shape = [4]
muir.grid @a axes = ["ep", "x"] shape = [2, 2] folds @world
muir.grid @b axes = ["ep"] shape = [4] folds @world
// An axis that two foldings have needs muir.folding to say which.
// expected-error@+1 {{'func.func' op argument 0: #muir.shard<expert, "ep", 0> names axis 'ep', which @a and @b both have: name one with muir.folding}}
func.func @ambiguous_axis(%e: tensor<8x4xf32> {muir.name = "e", muir.shards = [#muir.shard<expert, "ep", 0>]}) {
  return
}

// -----

// The logits must be split as the clipped rows: whole logits for split
// rows would clip with the wrong heads.
muir.grid @world axes = ["dp", "tp"] shape = [1, 2]
func.func @qk_clip_unsplit_logits(
    %q: tensor<16x8xf32> {muir.name = "q", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %qg: tensor<16x8xf32> {muir.name = "q.grad", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %qm: tensor<16x8xf32> {muir.name = "q.momentum", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %x: tensor<4xf32> {muir.name = "a.max_logits", muir.role = #muir.role<data>})
    -> (tensor<16x8xf32> {muir.updates = "q"}) {
  %q1, %qm1 = muir.muon_update %q, %qg, %qm {lr = 0.02} : tensor<16x8xf32>
  // expected-error@+1 {{'muir.qk_clip' op cannot be distributed: its max_logits must be split as the updated parameter's rows}}
  %cq = muir.qk_clip %q1, %x {tau = 10.0, head_rows = 4, group = 1} : tensor<16x8xf32>, tensor<4xf32>
  return %cq : tensor<16x8xf32>
}
