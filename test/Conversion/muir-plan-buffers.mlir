// RUN: muir-opt %s --muir-plan-buffers --split-input-file | FileCheck %s

// A CPU function's static temporaries at planned offsets of one arena:
// buffers whose lives overlap get disjoint bytes, the others share them.
// Lives (positions in the block): a [0,3], b [1,6], c [4,9], d [7,11].
// By size (a and c 256 bytes, b and d 128): a at 0; c at 0 (a is dead by
// then); b overlaps a and c, at 256; d overlaps c, not b, at 256: 384
// bytes for 768 allocated. The allocations become views, their frees go,
// and the arena is allocated first and freed before the return.
// CHECK-LABEL: func.func @overlaps
// CHECK-SAME: attributes {muir.arena_bytes = 384 : i64}
// CHECK: %[[ARENA:.+]] = memref.alloc() {alignment = 64 : i64} : memref<384xi8>
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<384xi8> to memref<64xf32>
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%c256{{.*}}][] : memref<384xi8> to memref<32xf32>
// CHECK: %[[C:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<384xi8> to memref<64xf32>
// CHECK: %[[D:.+]] = memref.view %[[ARENA]][%c256{{.*}}][] : memref<384xi8> to memref<32xf32>
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK: memref.dealloc %[[ARENA]]
// CHECK-NEXT: return
func.func @overlaps(%x: memref<64xf32>, %y: memref<32xf32>) {
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<32xf32>
  memref.copy %a, %x : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  %c = memref.alloc() : memref<64xf32>
  memref.copy %b, %y : memref<32xf32> to memref<32xf32>
  memref.dealloc %b : memref<32xf32>
  %d = memref.alloc() : memref<32xf32>
  memref.copy %c, %x : memref<64xf32> to memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  memref.copy %d, %y : memref<32xf32> to memref<32xf32>
  memref.dealloc %d : memref<32xf32>
  return
}

// -----

// Offsets are multiples of 64 bytes. Lives: x (64 B) [0,3], g (32 B)
// [1,10], u (32 B) [4,11], o (64 B) [5,6], p (64 B) [7,12]. x, o and p
// share 0 (their lives do not meet); g goes to 64 and u, which overlaps
// g, to 128 rather than 96: 160 bytes. (Both orders, by size and by
// breadth, the busiest moments' buffers first, give this here.)
// CHECK-LABEL: func.func @aligned
// CHECK-SAME: attributes {muir.arena_bytes = 160 : i64}
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<160xi8>
func.func @aligned(%x: memref<16xf32>, %y: memref<8xf32>) {
  %bx = memref.alloc() : memref<16xf32>
  %g = memref.alloc() : memref<8xf32>
  memref.copy %bx, %x : memref<16xf32> to memref<16xf32>
  memref.dealloc %bx : memref<16xf32>
  %u = memref.alloc() : memref<8xf32>
  %o = memref.alloc() : memref<16xf32>
  memref.dealloc %o : memref<16xf32>
  %p = memref.alloc() : memref<16xf32>
  memref.copy %g, %y : memref<8xf32> to memref<8xf32>
  memref.copy %u, %y : memref<8xf32> to memref<8xf32>
  memref.dealloc %g : memref<8xf32>
  memref.dealloc %u : memref<8xf32>
  memref.dealloc %p : memref<16xf32>
  return
}

// -----

// A loop's buffers live for the whole loop op (freed in their iteration,
// before the next one allocates them): they overlap each other and
// whatever lives across the loop, never themselves.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: attributes {muir.arena_bytes = 192 : i64}
// CHECK: %[[ARENA:.+]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8>
// CHECK: memref.view %[[ARENA]]
// CHECK: scf.for
// CHECK: memref.view %[[ARENA]]
// CHECK: memref.view %[[ARENA]]
// CHECK-NOT: memref.dealloc
// CHECK: }
// CHECK: memref.dealloc %[[ARENA]]
func.func @loop(%x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %keep = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<16xf32>
    %s = memref.alloc() : memref<16xf32>
    memref.copy %keep, %t : memref<16xf32> to memref<16xf32>
    memref.copy %t, %s : memref<16xf32> to memref<16xf32>
    memref.copy %s, %x : memref<16xf32> to memref<16xf32>
    memref.dealloc %t : memref<16xf32>
    memref.dealloc %s : memref<16xf32>
  }
  memref.dealloc %keep : memref<16xf32>
  return
}

// -----

// Left as they were: a buffer that a loop carries (freed elsewhere than
// its block), a dynamic shape, one never freed (returned), one in another
// memory space; a function with none planned gets no arena.
// CHECK-LABEL: func.func @unplanned
// CHECK-NOT: muir.arena_bytes
// CHECK-NOT: memref.view
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK: memref.alloc() : memref<8xf32, 1>
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.view
func.func @unplanned(%n: index, %x: memref<16xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %init = memref.alloc() : memref<16xf32>
  %last = scf.for %i = %c0 to %c2 step %c1 iter_args(%b = %init) -> (memref<16xf32>) {
    memref.copy %b, %x : memref<16xf32> to memref<16xf32>
    scf.yield %b : memref<16xf32>
  }
  memref.dealloc %last : memref<16xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %dyn : memref<?xf32>
  %space = memref.alloc() : memref<8xf32, 1>
  memref.dealloc %space : memref<8xf32, 1>
  %out = memref.alloc() : memref<4xf32>
  return %out : memref<4xf32>
}

// -----

// An allocation's own larger alignment holds for its offset and for the
// arena: b (16 bytes, aligned to 128) overlaps a (64 bytes at 0), so it
// goes to 128, not 64, and the arena is aligned to 128.
// CHECK-LABEL: func.func @wide_alignment
// CHECK-SAME: attributes {muir.arena_bytes = 144 : i64}
// CHECK: %[[ARENA:.+]] = memref.alloc() {alignment = 128 : i64} : memref<144xi8>
// CHECK: memref.view %[[ARENA]][%c0{{.*}}][] : memref<144xi8> to memref<16xf32>
// CHECK: memref.view %[[ARENA]][%c128{{.*}}][] : memref<144xi8> to memref<4xf32>
func.func @wide_alignment(%x: memref<16xf32>, %y: memref<4xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() {alignment = 128 : i64} : memref<4xf32>
  memref.copy %a, %x : memref<16xf32> to memref<16xf32>
  memref.copy %b, %y : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<4xf32>
  return
}
