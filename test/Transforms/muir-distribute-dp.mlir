// RUN: muir-opt %s --split-input-file --muir-distribute --verify-diagnostics | FileCheck %s
// RUN: muir-opt %s --split-input-file --muir-distribute=dp-assign=round-robin | FileCheck %s --check-prefix=RR
// RUN: muir-opt %s --split-input-file --muir-distribute=dp-assign=replicated | FileCheck %s --check-prefix=REP
// RUN: not muir-opt %s --split-input-file --muir-distribute=dp-assign=sideways 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: for the --dp-assign option: unknown value 'sideways'; expected one of: greedy, round-robin, replicated
// An axis that the grid lacks would silently stop sharing Newton-Schulz:
// RUN: not muir-opt %s --split-input-file --muir-distribute=dp-axis=nonexistent 2>&1 | FileCheck %s --check-prefix=AXIS
// AXIS: error: dp-axis 'nonexistent' is not an axis of grid @world (its axes: 'dp')

// Layer-wise over dp=2: weights m n min(m, n) per step are 5*64*64*64 (c),
// 5*16*32*16 (a) and 5*32*16*16 (b, transposed shape, same weight).
// Greedy, largest first to the least loaded: c -> 0, a -> 1, b -> 1.
// Round-robin in order: a -> 0, b -> 1, c -> 0. Each owner packs its
// results; one ragged all_gatherv brings them to every rank.
muir.grid @world axes = ["dp"] shape = [2]
// CHECK-LABEL: func.func @layerwise
// CHECK-COUNT-3: muir.momentum
// CHECK: %[[R:.+]] = muir.group_rank on @world axes = ["dp"] : index
// CHECK: %[[S:.+]] = scf.index_switch %[[R]] -> tensor<4096xf32>
// CHECK: case 0 {
// CHECK: %[[C:.+]] = muir.newton_schulz %{{.*}} : tensor<64x64xf32>
// CHECK: %[[CF:.+]] = tensor.collapse_shape %[[C]] {{\[\[}}0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
// CHECK: scf.yield %[[CF]] : tensor<4096xf32>
// CHECK: case 1 {
// CHECK: muir.newton_schulz %{{.*}} : tensor<16x32xf32>
// CHECK: muir.newton_schulz %{{.*}} : tensor<32x16xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<3072xf32>
// CHECK: tensor.concat dim(0) %{{.*}}, %{{.*}}, %[[E]] : (tensor<512xf32>, tensor<512xf32>, tensor<3072xf32>) -> tensor<4096xf32>
// CHECK: default {
// CHECK: %[[G:.+]] = muir.all_gatherv %[[S]] on @world axes = ["dp"] gather_axis = 0 sizes = [4096, 1024] : tensor<4096xf32> -> tensor<5120xf32>
// CHECK: tensor.extract_slice %[[G]][0] [4096] [1]
// CHECK: muir.apply_update %{{.*}} {lr = 2.000000e-02 : f64, muir.dp_owner = 0 : i64, muir.dp_weight = 1.310720e+06 : f64, scale = {{.*}}} : tensor<64x64xf32>
// CHECK: tensor.extract_slice %[[G]][4096] [512] [1]
// CHECK: muir.apply_update {{.*}} muir.dp_owner = 1 : i64{{.*}} : tensor<16x32xf32>
// CHECK: tensor.extract_slice %[[G]][4608] [512] [1]
// CHECK: muir.apply_update {{.*}} muir.dp_owner = 1 : i64{{.*}} : tensor<32x16xf32>
// CHECK-NOT: muir.muon_update
// RR-LABEL: func.func @layerwise
// RR: muir.all_gatherv {{.*}} sizes = [4608, 512]
// RR: muir.apply_update {{.*}} muir.dp_owner = 0 : i64{{.*}} : tensor<16x32xf32>
// RR: muir.apply_update {{.*}} muir.dp_owner = 0 : i64{{.*}} : tensor<64x64xf32>
// RR: muir.apply_update {{.*}} muir.dp_owner = 1 : i64{{.*}} : tensor<32x16xf32>
// REP-LABEL: func.func @layerwise
// REP-NOT: muir.group_rank
// REP-NOT: muir.all_gatherv
// REP-COUNT-3: muir.muon_update
func.func @layerwise(%a: tensor<16x32xf32> {muir.name = "a"},
                     %ag: tensor<16x32xf32> {muir.name = "a.grad"},
                     %am: tensor<16x32xf32> {muir.name = "a.momentum"},
                     %b: tensor<32x16xf32> {muir.name = "b"},
                     %bg: tensor<32x16xf32> {muir.name = "b.grad"},
                     %bm: tensor<32x16xf32> {muir.name = "b.momentum"},
                     %c: tensor<64x64xf32> {muir.name = "c"},
                     %cg: tensor<64x64xf32> {muir.name = "c.grad"},
                     %cm: tensor<64x64xf32> {muir.name = "c.momentum"})
    -> (tensor<16x32xf32> {muir.updates = "a"}, tensor<32x16xf32> {muir.updates = "b"}, tensor<64x64xf32> {muir.updates = "c"}) {
  %a1, %am1 = muir.muon_update %a, %ag, %am {lr = 0.02} : tensor<16x32xf32>
  %b1, %bm1 = muir.muon_update %b, %bg, %bm {lr = 0.02} : tensor<32x16xf32>
  %c1, %cm1 = muir.muon_update %c, %cg, %cm {lr = 0.02} : tensor<64x64xf32>
  return %a1, %b1, %c1 : tensor<16x32xf32>, tensor<32x16xf32>, tensor<64x64xf32>
}

// -----

// FSDP over dp=2 (rows split): each rank sends its 8x16 shard to the owner
// in one all_to_allv (counts per owner), the owner stacks the shards in
// rank order, orthogonalises the whole 16x16 matrix and returns block r to
// rank r in a second all_to_allv whose counts it yields.
muir.grid @world axes = ["dp"] shape = [2]
// CHECK-LABEL: func.func @fsdp
// CHECK-SAME: tensor<8x16xf32> {muir.name = "w", muir.shards = [#muir.shard<fsdp, "dp", 0>], muir.split = [#muir.split<@world, ["dp"], 0>]}
// CHECK: %[[U:.+]], %{{.+}} = muir.momentum
// CHECK: %[[F:.+]] = tensor.collapse_shape %[[U]] {{\[\[}}0, 1]] : tensor<8x16xf32> into tensor<128xf32>
// CHECK: %[[N:.+]] = arith.constant dense<[128, 0]> : tensor<2xi64>
// CHECK: %[[IN:.+]], %{{.+}} = muir.all_to_allv %[[F]], %[[N]] on @world axes = ["dp"] : (tensor<128xf32>, tensor<2xi64>) -> (tensor<256xf32>, tensor<2xi64>)
// CHECK: %[[S:.+]]:2 = scf.index_switch %{{.*}} -> tensor<256xf32>, tensor<2xi64>
// CHECK: case 0 {
// CHECK: tensor.extract_slice %[[IN]][0] [128] [1]
// CHECK: tensor.extract_slice %[[IN]][128] [128] [1]
// CHECK: %[[W:.+]] = tensor.concat dim(0) {{.*}} -> tensor<16x16xf32>
// CHECK: %[[O:.+]] = muir.newton_schulz %[[W]] {{.*}} : tensor<16x16xf32>
// CHECK: tensor.extract_slice %[[O]][0, 0] [8, 16] [1, 1]
// CHECK: tensor.extract_slice %[[O]][8, 0] [8, 16] [1, 1]
// CHECK: arith.constant dense<128> : tensor<2xi64>
// CHECK: case 1 {
// CHECK-NOT: muir.newton_schulz
// CHECK: arith.constant dense<0> : tensor<2xi64>
// CHECK: default {
// CHECK: %[[BACK:.+]], %{{.+}} = muir.all_to_allv %[[S]]#0, %[[S]]#1 on @world axes = ["dp"] : (tensor<256xf32>, tensor<2xi64>) -> (tensor<128xf32>, tensor<2xi64>)
// CHECK: muir.apply_update {{.*}} muir.dp_owner = 0 : i64, muir.dp_weight = {{[0-9.eE+-]+}} : f64, muir.ns_why = #muir.ns_why<fsdp_owner>{{.*}} : tensor<8x16xf32>
func.func @fsdp(%w: tensor<16x16xf32> {muir.name = "w", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                %g: tensor<16x16xf32> {muir.name = "w.grad", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                %m: tensor<16x16xf32> {muir.name = "w.momentum", muir.shards = [#muir.shard<fsdp, "dp", 0>]})
    -> (tensor<16x16xf32> {muir.updates = "w"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<16x16xf32>
  return %w1 : tensor<16x16xf32>
}

// -----

// Left alone: an expert stack split over dp on its expert dimension runs NS
// per local expert, with nothing to share out; on a grid without dp > 1
// nothing is shared out either.
muir.grid @world axes = ["dp", "tp"] shape = [2, 1]
// CHECK-LABEL: func.func @local_experts
// CHECK-NOT: muir.group_rank
// CHECK: muir.muon_update {{.*}} : tensor<2x8x8xf32>
func.func @local_experts(%e: tensor<4x8x8xf32> {muir.name = "e", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                         %g: tensor<4x8x8xf32> {muir.name = "e.grad", muir.shards = [#muir.shard<fsdp, "dp", 0>]},
                         %m: tensor<4x8x8xf32> {muir.name = "e.momentum", muir.shards = [#muir.shard<fsdp, "dp", 0>]})
    -> (tensor<4x8x8xf32> {muir.updates = "e"}) {
  %e1, %m1 = muir.muon_update %e, %g, %m {lr = 0.02} : tensor<4x8x8xf32>
  return %e1 : tensor<4x8x8xf32>
}

// -----

muir.grid @world axes = ["dp", "tp"] shape = [1, 2]
// CHECK-LABEL: func.func @no_dp
// CHECK-NOT: muir.group_rank
// CHECK: muir.muon_update {{.*}} : tensor<8x8xf32>
func.func @no_dp(%w: tensor<8x8xf32> {muir.name = "w"},
                 %g: tensor<8x8xf32> {muir.name = "w.grad"},
                 %m: tensor<8x8xf32> {muir.name = "w.momentum"})
    -> (tensor<8x8xf32> {muir.updates = "w"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<8x8xf32>
  return %w1 : tensor<8x8xf32>
}

// -----

// QK-clip of matrices shared out over dp: each clip runs on every rank,
// after the gather, on the gathered update; q's heads split over tp with
// its rows, so the clip reads this rank's 2 of 4 logits.
muir.grid @world axes = ["dp", "tp"] shape = [2, 2]
// CHECK-LABEL: func.func @qk_clip_spread
// CHECK-SAME: %[[X:[^:]+]]: tensor<2xf32> {muir.name = "a.max_logits", muir.role = #muir.role<data>, muir.shards = [#muir.shard<tp_column, "tp", 0>], muir.split = [#muir.split<@world, ["tp"], 0>]}
// CHECK: muir.all_gatherv
// CHECK: %[[Q:.+]] = muir.apply_update {{.*}} : tensor<8x8xf32>
// CHECK: %[[K:.+]] = muir.apply_update {{.*}} : tensor<8x8xf32>
// CHECK: %[[CQ:.+]] = muir.qk_clip %[[Q]], %[[X]] {group = 1 : i64, head_rows = 4 : i64, tau = 1.000000e+01 : f64} : tensor<8x8xf32>, tensor<2xf32>
// CHECK-NEXT: %[[CK:.+]] = muir.qk_clip %[[K]], %[[X]] {group = 1 : i64, head_rows = 4 : i64, tau = 1.000000e+01 : f64} : tensor<8x8xf32>, tensor<2xf32>
// CHECK-NEXT: return %[[CQ]], %[[CK]]
// REP-LABEL: func.func @qk_clip_spread
// REP: muir.qk_clip {{.*}} : tensor<8x8xf32>, tensor<2xf32>
func.func @qk_clip_spread(
    %q: tensor<16x8xf32> {muir.name = "q", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %qg: tensor<16x8xf32> {muir.name = "q.grad", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %qm: tensor<16x8xf32> {muir.name = "q.momentum", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %k: tensor<16x8xf32> {muir.name = "k", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %kg: tensor<16x8xf32> {muir.name = "k.grad", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %km: tensor<16x8xf32> {muir.name = "k.momentum", muir.shards = [#muir.shard<tp_column, "tp", 0>]},
    %x: tensor<4xf32> {muir.name = "a.max_logits", muir.role = #muir.role<data>, muir.shards = [#muir.shard<tp_column, "tp", 0>]})
    -> (tensor<16x8xf32> {muir.updates = "q"}, tensor<16x8xf32> {muir.updates = "k"}) {
  %q1, %qm1 = muir.muon_update %q, %qg, %qm {lr = 0.02} : tensor<16x8xf32>
  %k1, %km1 = muir.muon_update %k, %kg, %km {lr = 0.02} : tensor<16x8xf32>
  %cq = muir.qk_clip %q1, %x {tau = 10.0, head_rows = 4, group = 1} : tensor<16x8xf32>, tensor<4xf32>
  %ck = muir.qk_clip %k1, %x {tau = 10.0, head_rows = 4, group = 1} : tensor<16x8xf32>, tensor<4xf32>
  return %cq, %ck : tensor<16x8xf32>, tensor<16x8xf32>
}

