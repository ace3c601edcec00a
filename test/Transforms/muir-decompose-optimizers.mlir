// RUN: muir-opt %s --split-input-file --muir-decompose-optimizers | FileCheck %s
// RUN: muir-opt %s --split-input-file --muir-decompose-optimizers=probe-updates=true | FileCheck %s --check-prefix=PROBE
// RUN: muir-opt %s --split-input-file --muir-decompose-optimizers=ns-precision=bf16 | FileCheck %s --check-prefix=BF16

// The update scale is computed from the shape: spectral = 0.2 * sqrt(max(m, n))
// = 0.2 * sqrt(8) = 0.565685...
// CHECK-LABEL: func.func @spectral_wide
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32> {muir.name = "w"}, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>)
// CHECK: %[[U:.+]], %[[M1:.+]] = muir.momentum %[[G]], %[[M]] {beta = 9.000000e-01 : f64, momentum_kind = #muir<momentum_kind ema>, nesterov = true}
// CHECK: %[[O:.+]] = muir.newton_schulz %[[U]] steps(5) schedule(simple) : tensor<4x8xf32>
// CHECK: %[[W1:.+]] = muir.apply_update %[[W]], %[[O]] {lr = 2.000000e-02 : f64, scale = 0.56568542494923{{[0-9]*}} : f64, weight_decay = 1.000000e-01 : f64}
// CHECK: return %[[W1]], %[[M1]]
// CHECK-NOT: muir.muon_update
// ns-precision=bf16: the Newton-Schulz op iterates in bf16.
// BF16-LABEL: func.func @spectral_wide
// BF16: muir.newton_schulz %{{.*}} steps(5) schedule(simple) {precision = #muir.ns_precision<bf16>} : tensor<4x8xf32>
// PROBE-LABEL: func.func @spectral_wide
// PROBE: %[[O:.+]] = muir.newton_schulz
// PROBE-NEXT: muir.probe %[[O]] {label = "w", slot = 0 : i64}
func.func @spectral_wide(%w: tensor<4x8xf32> {muir.name = "w"}, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02, beta = 0.9, weight_decay = 0.1} : tensor<4x8xf32>
  return %w1, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// shape = sqrt(max(1, m/n)): 1 for a wide matrix, sqrt(2) for 8x4.
// unit_rms = sqrt(m/n) = sqrt(1/2) for 4x8. The NS settings carry over.
// CHECK-LABEL: func.func @scale_modes
// CHECK: muir.momentum {{.*}}momentum_kind = #muir<momentum_kind accumulate>, nesterov = false
// CHECK: muir.newton_schulz %{{.*}} steps(3) schedule(custom) coefficients([2.000000e+00, -1.000000e+00, 5.000000e-01]) {eps = 1.000000e-03 : f64}
// CHECK: muir.apply_update {{.*}}scale = 1.000000e+00 : f64
// CHECK: muir.apply_update {{.*}}scale = 1.4142135623730{{[0-9]*}} : f64
// CHECK: muir.apply_update {{.*}}scale = 0.70710678118654{{[0-9]*}} : f64
// PROBE-LABEL: func.func @scale_modes
// PROBE: muir.probe %{{.*}} {label = "muon_update@0", slot = 0 : i64}
// PROBE: muir.probe %{{.*}} {label = "muon_update@1", slot = 1 : i64}
// PROBE: muir.probe %{{.*}} {label = "muon_update@2", slot = 2 : i64}
func.func @scale_modes(%w: tensor<4x8xf32>, %t: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %a, %am = muir.muon_update %w, %w, %w {lr = 0.1, momentum_kind = #muir<momentum_kind accumulate>, nesterov = false, scale_mode = #muir<scale_mode shape>, ns_steps = 3, schedule = #muir<schedule custom>, coefficients = array<f64: 2.0, -1.0, 0.5>, eps = 1.0e-3} : tensor<4x8xf32>
  %b, %bm = muir.muon_update %t, %t, %t {lr = 0.1, scale_mode = #muir<scale_mode shape>} : tensor<8x4xf32>
  %c, %cm = muir.muon_update %w, %w, %w {lr = 0.1, scale_mode = #muir<scale_mode unit_rms>} : tensor<4x8xf32>
  return %a, %b, %c : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// Expert stacks keep their 3-D type; the scale uses the matrix dims (16x64:
// 0.2 * sqrt(64) = 1.6).
// CHECK-LABEL: func.func @expert_stack
// CHECK: muir.newton_schulz %{{.*}} : tensor<8x16x64xf32>
// CHECK: muir.apply_update {{.*}}scale = 1.600000e+00 : f64
func.func @expert_stack(%w: tensor<8x16x64xf32>, %g: tensor<8x16x64xf32>, %m: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02} : tensor<8x16x64xf32>
  return %w1 : tensor<8x16x64xf32>
}

// -----

// AdamW and plain Newton-Schulz are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK: muir.adamw_update
// CHECK: muir.newton_schulz
// CHECK-NOT: muir.momentum
// PROBE-LABEL: func.func @untouched
// PROBE-NOT: muir.probe
func.func @untouched(%p: tensor<16xf32>, %t: i64, %x: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
  %p1, %m1, %v1 = muir.adamw_update %p, %p, %p, %p step %t {lr = 0.001} : tensor<16xf32>
  %y = muir.newton_schulz %x steps(5) schedule(quintic) : tensor<4x4xf32>
  return %p1, %y : tensor<16xf32>, tensor<4x4xf32>
}

// -----

// Row blocks: one momentum for the whole matrix; each block is sliced,
// orthogonalised and scaled with its own shape (spectral: 0.2 * sqrt(max(4,
// 16)) = 0.8 for both blocks here), and the updated blocks are concatenated.
// CHECK-LABEL: func.func @row_blocks
// CHECK-SAME: (%[[W:[^:]+]]: tensor<8x16xf32>
// CHECK: %[[U:.+]], %{{.+}} = muir.momentum
// CHECK: %[[U0:.+]] = tensor.extract_slice %[[U]][0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
// CHECK: %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0] [4, 16] [1, 1]
// CHECK: %[[O0:.+]] = muir.newton_schulz %[[U0]] steps(5) schedule(simple) : tensor<4x16xf32>
// CHECK: %[[P0:.+]] = muir.apply_update %[[W0]], %[[O0]] {{.*}}scale = 8.000000e-01
// CHECK: tensor.extract_slice %[[U]][4, 0] [4, 16] [1, 1]
// CHECK: %[[P1:.+]] = muir.apply_update
// CHECK: %[[P:.+]] = tensor.concat dim(0) %[[P0]], %[[P1]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
// CHECK: return %[[P]]
// PROBE-LABEL: func.func @row_blocks
// PROBE: muir.probe %{{.*}} {label = "qkv[0:4]", slot = 0 : i64}
// PROBE: muir.probe %{{.*}} {label = "qkv[4:8]", slot = 1 : i64}
func.func @row_blocks(%w: tensor<8x16xf32> {muir.name = "qkv"}, %g: tensor<8x16xf32>, %m: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w1, %m1 = muir.muon_update %w, %g, %m {lr = 0.02, row_blocks = array<i64: 4, 4>} : tensor<8x16xf32>
  return %w1 : tensor<8x16xf32>
}

// -----

// Updates applied already (muir-distribute's muir.apply_update of a split
// or dp-owned matrix) are probed too, labelled with the parameter's name,
// a row block's with its rows, after the probes in the module; an update
// probed already is not probed again. Without probe-updates nothing is.
// CHECK-LABEL: func.func @applied
// CHECK-NOT: muir.probe {{.*}}label = "w"
// PROBE-LABEL: func.func @applied
// PROBE-SAME: (%[[W:[^:]+]]: tensor<4x8xf32> {muir.name = "w"}, %[[O:[^:]+]]: tensor<4x8xf32>, %[[Q:[^:]+]]: tensor<8x8xf32> {muir.name = "q"}, %[[P:[^:]+]]: tensor<4x8xf32>, %[[X:[^:]+]]: tensor<4x8xf32>)
// PROBE: muir.probe %[[O]] {label = "w", slot = 1 : i64}
// PROBE-NEXT: muir.apply_update %[[W]], %[[O]]
// PROBE: %[[QB:.+]] = tensor.extract_slice %[[Q]][4, 0] [4, 8] [1, 1]
// PROBE-NEXT: muir.probe %[[P]] {label = "q[4:8]", slot = 2 : i64}
// PROBE-NEXT: muir.apply_update %[[QB]], %[[P]]
// PROBE: muir.probe %[[X]] {label = "seen", slot = 0 : i64}
// PROBE-NOT: muir.probe
func.func @applied(%w: tensor<4x8xf32> {muir.name = "w"}, %o: tensor<4x8xf32>,
                   %q: tensor<8x8xf32> {muir.name = "q"}, %p: tensor<4x8xf32>,
                   %x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = muir.apply_update %w, %o {lr = 0.02, scale = 1.0, weight_decay = 0.0} : tensor<4x8xf32>
  %qb = tensor.extract_slice %q[4, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  %q1 = muir.apply_update %qb, %p {lr = 0.02, scale = 1.0, weight_decay = 0.0} : tensor<4x8xf32>
  muir.probe %x {label = "seen", slot = 0 : i64} : tensor<4x8xf32>
  %x1 = muir.apply_update %w, %x {lr = 0.02, scale = 1.0, weight_decay = 0.0} : tensor<4x8xf32>
  return %w1, %q1, %x1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A run-time take flag reaches the momentum and the apply (the Newton-Schulz
// of a skipped matrix runs on U = 0 and is not applied).
// CHECK-LABEL: func.func @take_flag
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[T:[^:]+]]: i1)
// CHECK: %[[U:.+]], %[[M1:.+]] = muir.momentum %[[G]], %[[M]] take(%[[T]])
// CHECK: %[[O:.+]] = muir.newton_schulz %[[U]]
// CHECK: muir.apply_update %[[W]], %[[O]] take(%[[T]])
// PROBE-LABEL: func.func @take_flag
// BF16-LABEL: func.func @take_flag
func.func @take_flag(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %t: i1) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1, %m1 = muir.muon_update %w, %g, %m take(%t) {lr = 0.02} : tensor<4x8xf32>
  return %w1, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// NorMuon: Muon's momentum and Newton-Schulz, then the rows' second moment
// and normalisation (columns: the matrix's n), the scale to the update RMS
// (scale_by_norm of the sum of squares, then apply_update's scale
// scale_extra * sqrt(m * n) = 0.2 * sqrt(4 * 8)), the take flag at the
// momentum, the normalisation and the apply.
// CHECK-LABEL: func.func @normuon
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x8xf32> {muir.name = "w"}, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[V:[^:]+]]: tensor<4xf32>, %[[T:[^:]+]]: i1)
// CHECK: %[[U:.+]], %[[M1:.+]] = muir.momentum %[[G]], %[[M]] take(%[[T]])
// CHECK: %[[O:.+]] = muir.newton_schulz %[[U]]
// CHECK: %[[S:.+]] = muir.row_sum_squares %[[O]] : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[P:.+]], %[[V1:.+]] = muir.normuon_normalize %[[O]], %[[S]], %[[V]] take(%[[T]]) {beta2 = 9.000000e-01 : f64, columns = 8 : i64, eps2 = 1.000000e-08 : f64}
// CHECK: %[[SS:.+]] = muir.sum_squares %[[P]] : tensor<4x8xf32> -> tensor<1xf32>
// CHECK: %[[N:.+]] = muir.scale_by_norm %[[P]], %[[SS]] {eps = 1.000000e-30 : f64}
// CHECK: %[[W1:.+]] = muir.apply_update %[[W]], %[[N]] take(%[[T]]) {lr = 2.000000e-02 : f64, scale = 1.1313708498984762 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK: return %[[W1]], %[[M1]], %[[V1]]
// PROBE-LABEL: func.func @normuon
// PROBE: %[[O:.+]] = muir.newton_schulz
// PROBE-NEXT: muir.probe %[[O]] {label = "w", slot = 0 : i64}
// BF16-LABEL: func.func @normuon
// BF16: muir.newton_schulz {{.*}}precision = #muir.ns_precision<bf16>
func.func @normuon(%w: tensor<4x8xf32> {muir.name = "w"}, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4xf32>, %t: i1) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %w1, %m1, %v1 = muir.normuon_update %w, %g, %m, %v take(%t) {lr = 0.02, beta2 = 0.9} : tensor<4x8xf32>, tensor<4xf32>
  return %w1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}
