// RUN: muir-opt %s --muir-distribute=ns-mode=distributed | FileCheck %s --check-prefix=DIST
// RUN: muir-opt %s --muir-distribute=ns-mode=blockwise | FileCheck %s --check-prefix=BLOCK
// RUN: muir-opt %s --muir-distribute | FileCheck %s --check-prefix=AUTO
// RUN: muir-opt %s --muir-distribute=machine=h200 | FileCheck %s --check-prefix=AUTO-H200
// RUN: muir-opt %s --muir-distribute=machine=h200-bf16 | FileCheck %s --check-prefix=AUTO-H200-BF16
// RUN: muir-opt %s --muir-distribute=ns-mode=resharded | FileCheck %s --check-prefix=RESH
// RUN: muir-opt %s --muir-distribute="ns-mode=distributed ns-form=gram" | FileCheck %s --check-prefix=GRAM

// A 256x1024 matrix split by columns over tp=4 (local 256x256).
muir.grid @world axes = ["tp"] shape = [4]

// Distributed: the norm and each step's 256x256 Gram matrix (over the
// unsplit rows) are all-reduced; X <- a X + B X stays local. The steps are
// one loop whose body is one step, its all-reduce included.
// DIST-LABEL: func.func @step
// DIST: %[[U:.+]], %{{.+}} = muir.momentum {{.*}} : tensor<256x256xf32>
// DIST: %[[SS:.+]] = muir.sum_squares %[[U]] : tensor<256x256xf32> -> tensor<1xf32>
// DIST: %[[N:.+]] = muir.all_reduce %[[SS]] on @world axes = ["tp"] : tensor<1xf32>
// DIST: %[[X0:.+]] = muir.scale_by_norm %[[U]], %[[N]] : tensor<256x256xf32>, tensor<1xf32>
// DIST-DAG: %[[CA:.+]] = arith.constant 3.444500e+00 : f64
// DIST-DAG: %[[CB:.+]] = arith.constant -4.775000e+00 : f64
// DIST-DAG: %[[CC:.+]] = arith.constant 2.031500e+00 : f64
// DIST-DAG: %[[STEPS:.+]] = arith.constant 5 : index
// DIST: scf.for %{{.+}} = %{{.+}} to %[[STEPS]] step %{{.+}} iter_args(%[[X:.+]] = %[[X0]]) -> (tensor<256x256xf32>) {
// DIST-NEXT: %[[G:.+]] = muir.matmul %[[X]], %[[X]] {transpose_b} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
// DIST-NEXT: %[[GR:.+]] = muir.all_reduce %[[G]] on @world axes = ["tp"] : tensor<256x256xf32>
// DIST-NEXT: %[[B:.+]] = muir.matmul %[[GR]], %[[GR]] acc %[[GR]] alpha(%[[CC]]) beta(%[[CB]])
// DIST-NEXT: %[[X1:.+]] = muir.matmul %[[B]], %[[X]] acc %[[X]] beta(%[[CA]])
// DIST-NEXT: scf.yield %[[X1]]
// DIST-NOT: muir.all_reduce
// DIST-NOT: muir.all_gather
// DIST: muir.apply_update {{.*}}muir.ns_mode = #muir.ns_mode<distributed>, muir.ns_why = #muir.ns_why<requested>, scale = 6.400000e+00 : f64

// Blockwise: NS of the local block, scaled by the block's shape.
// BLOCK-LABEL: func.func @step
// BLOCK-NOT: muir.all_
// BLOCK: muir.newton_schulz %{{.*}} : tensor<256x256xf32>
// BLOCK: muir.apply_update {{.*}}muir.ns_mode = #muir.ns_mode<blockwise>{{.*}}scale = 3.200000e+00 : f64

// The cost model picks per machine and keeps its reason on the update: on
// this CPU the distributed mode's split Gram work wins over gathering and
// orthogonalising the whole matrix on every rank (and its standard form
// over the Gram form, whose s x s iteration runs in f64 at 0.43 of the f32
// rate here); on an H200 node, where compute is cheap and each all-reduce
// costs latency, the Gram form's single all-reduce wins (0.0179 ms against
// duplicated's 0.0207, whose gathered 256x1024 also takes the Gram form).
// The Gram form's triangles go whole to each of the 3 peers: 0.79 MB.
// AUTO: muir.apply_update {{.*}}muir.ns_form = #muir.ns_form<standard>, muir.ns_mode = #muir.ns_mode<distributed>, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, standard, {{.*}} ms, 0.786 MB>, <distributed, standard, {{.*}} ms, 0.987 MB>, <distributed, gram, {{.*}} ms, 0.79 MB>]>
// AUTO-H200: muir.ns_form = #muir.ns_form<gram>, muir.ns_mode = #muir.ns_mode<distributed>, muir.ns_why = #muir.ns_why<cost_model on "h200" : [<duplicated, gram, 0.0207 ms, {{.*}}>, <distributed, gram, 0.0179 ms, {{.*}}>]>
// The profiles' rates are cuBLAS's as the CUDA runtime runs the products,
// measured on an H200: 50.9 TFLOP/s fp32, 768 bf16 (1.5 GFLOP: 30 and 2 us
// of the duplicated mode's 40 and 13 in the standard form, which bf16
// keeps: its f32 products outrun the Gram form's f64 ones).
// AUTO-H200-BF16: muir.ns_mode = #muir.ns_mode<duplicated>, muir.ns_why = #muir.ns_why<cost_model on "h200-bf16" : [<duplicated, standard, 0.0127 ms, {{.*}}>]>
// Distributed in the Gram form: the local slice's raw Gram matrix with its
// products summed in f64, one packed all-reduce of it (no norm all-reduce:
// its trace is the squared norm), the 256x256 iteration on every rank, the
// slice times s Q.
// GRAM-LABEL: func.func @step
// GRAM-NOT: muir.all_reduce
// GRAM: %[[A0:.+]] = muir.syrk %[[U:[^ ]+]] : (tensor<256x256xf32>) -> tensor<256x256xf64>
// GRAM: %[[A:.+]] = muir.symmetric_all_reduce %[[A0]] on @world axes = ["tp"] : tensor<256x256xf64>
// GRAM: %{{.+}}, %[[S:.+]] = muir.trace_normalize %[[A]]
// GRAM: %[[Q:.+]] = muir.scale_matrices %{{.+}}, %[[S]] : tensor<256x256xf64>, tensor<1xf64> -> tensor<256x256xf32>
// GRAM: %[[X:.+]] = muir.matmul %[[Q]], %[[U]] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
// GRAM: muir.apply_update %{{.*}}, %[[X]] {{.*}}muir.ns_form = #muir.ns_form<gram>, muir.ns_mode = #muir.ns_mode<distributed>
// GRAM-NOT: muir.all_reduce
func.func @step(%w: tensor<256x1024xf32> {muir.name = "w", muir.shards = [#muir.shard<tp_row, "tp", 1>]},
                %g: tensor<256x1024xf32> {muir.name = "w.grad", muir.shards = [#muir.shard<tp_row, "tp", 1>]},
                %m: tensor<256x1024xf32> {muir.name = "w.momentum", muir.shards = [#muir.shard<tp_row, "tp", 1>]})
    -> (tensor<256x1024xf32> {muir.updates = "w"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<256x1024xf32>
  return %w1 : tensor<256x1024xf32>
}

// A 1024x256 matrix split on its smaller dimension (columns) over tp=4:
// distributed would all-reduce 1024x1024 Gram matrices; re-sharding it to a
// row split first (all_to_all), running distributed with 256x256 Gram
// matrices and re-sharding back is the cheapest on this CPU.
// AUTO-LABEL: func.func @smaller
// AUTO: muir.all_to_all
// AUTO: muir.all_reduce {{.*}} : tensor<256x256xf32>
// AUTO: muir.apply_update {{.*}}muir.ns_mode = #muir.ns_mode<resharded>, muir.ns_why = #muir.ns_why<cost_model on "cpu" : [<duplicated, standard, {{.*}} ms, 0.786 MB>, <distributed, standard, {{.*}} ms, 15.7 MB>, <distributed, gram, {{.*}} ms, 12.6 MB>, <resharded, standard, {{.*}} ms, {{.*}} MB>, <resharded, gram, {{.*}} ms, {{.*}} MB>]>
// Requested: column blocks of the own rows stacked and exchanged, the
// distributed steps on the 256x256 row shard, and the way back.
// RESH-LABEL: func.func @smaller
// RESH: %[[U:.+]], %{{.+}} = muir.momentum {{.*}} : tensor<1024x64xf32>
// RESH: %[[A:.+]] = muir.all_to_all %[[U]] on @world axes = ["tp"] split_axis = 0 concat_axis = 0 : tensor<1024x64xf32> -> tensor<1024x64xf32>
// RESH: tensor.extract_slice %[[A]][768, 0] [256, 64] [1, 1]
// RESH: %[[R:.+]] = tensor.concat dim(1) {{.*}} -> tensor<256x256xf32>
// RESH: muir.sum_squares %[[R]]
// RESH: muir.matmul {{.*}} {transpose_a} : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
// RESH: muir.all_reduce {{.*}} : tensor<256x256xf32>
// RESH: tensor.extract_slice %{{.*}}[0, 192] [256, 64] [1, 1]
// RESH: %[[P:.+]] = tensor.concat dim(0) {{.*}} -> tensor<1024x64xf32>
// RESH: %[[B:.+]] = muir.all_to_all %[[P]] on @world axes = ["tp"]
// RESH: muir.apply_update %{{.*}}, %[[B]] {{.*}}muir.ns_mode = #muir.ns_mode<resharded>
func.func @smaller(%w: tensor<1024x256xf32> {muir.name = "v", muir.shards = [#muir.shard<tp_column, "tp", 1>]},
                   %g: tensor<1024x256xf32> {muir.name = "v.grad", muir.shards = [#muir.shard<tp_column, "tp", 1>]},
                   %m: tensor<1024x256xf32> {muir.name = "v.momentum", muir.shards = [#muir.shard<tp_column, "tp", 1>]})
    -> (tensor<1024x256xf32> {muir.updates = "v"}) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<1024x256xf32>
  return %w1 : tensor<1024x256xf32>
}
