// RUN: muir-opt %s -split-input-file -verify-diagnostics
//
// The buffers of an exec function (muir.entry; MuirDialect.cpp,
// EntryBuffers): refused when read are a buffer deallocated twice, used
// after its dealloc, and the dealloc of what the function did not allocate
// (an argument, a global, a stack buffer, a view). The error is at the op,
// with a note at the first dealloc. Where control flow leaves the order
// open (a dealloc in a loop or in one branch only) nothing is refused.

func.func @twice(%p: memref<4xf32>) attributes {muir.entry} {
  %a = memref.alloc() : memref<4xf32>
  muir_exec.gemm %p, %p, %a {alpha = 1.0, beta = 0.0} : memref<4xf32>, memref<4xf32>, memref<4xf32>
  // expected-note@+1 {{deallocated here}}
  memref.dealloc %a : memref<4xf32>
  // expected-error@+1 {{'memref.dealloc' op deallocates a buffer that was deallocated already}}
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

func.func @use_after(%p: memref<4x4xf32>) attributes {muir.entry} {
  %a = memref.alloc() : memref<4x4xf32>
  // expected-note@+1 {{deallocated here}}
  memref.dealloc %a : memref<4x4xf32>
  // expected-error@+1 {{'muir_exec.gemm' op uses a buffer after it was deallocated (operand #2)}}
  muir_exec.gemm %p, %p, %a {alpha = 1.0, beta = 0.0} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  return
}

// -----

// A view made before the dealloc, used after it.
func.func @view_after(%p: memref<4xf32>) attributes {muir.entry} {
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  // expected-note@+1 {{deallocated here}}
  memref.dealloc %a : memref<8xf32>
  // expected-error@+1 {{'memref.copy' op uses a buffer after it was deallocated (operand #1)}}
  memref.copy %p, %v : memref<4xf32> to memref<4xf32, strided<[1]>>
  return
}

// -----

// A use inside a loop after the dealloc before it.
func.func @use_in_loop(%p: memref<4xf32>) attributes {muir.entry} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  // expected-note@+1 {{deallocated here}}
  memref.dealloc %a : memref<4xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    // expected-error@+1 {{'memref.copy' op uses a buffer after it was deallocated (operand #0)}}
    memref.copy %a, %p : memref<4xf32> to memref<4xf32>
  }
  return
}

// -----

func.func @argument(%p: memref<4xf32>) attributes {muir.entry} {
  // expected-error@+1 {{'memref.dealloc' op deallocates function argument #0, which the caller owns}}
  memref.dealloc %p : memref<4xf32>
  return
}

// -----

memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
func.func @global() attributes {muir.entry} {
  %g = memref.get_global @table : memref<2xf32>
  // expected-error@+1 {{'memref.dealloc' op deallocates a global (memref.get_global), which was never allocated}}
  memref.dealloc %g : memref<2xf32>
  return
}

// -----

func.func @stack() attributes {muir.entry} {
  %s = memref.alloca() : memref<2xf32>
  // expected-error@+1 {{'memref.dealloc' op deallocates a stack buffer (memref.alloca), which is released on return}}
  memref.dealloc %s : memref<2xf32>
  return
}

// -----

func.func @view() attributes {muir.entry} {
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  // expected-error@+1 {{'memref.dealloc' op deallocates a view (memref.subview) of a buffer; deallocate the buffer itself}}
  memref.dealloc %v : memref<4xf32, strided<[1], offset: 4>>
  return
}

// -----

// Deallocated in both branches, then used.
func.func @both_branches(%c: i1, %p: memref<4xf32>) attributes {muir.entry} {
  %a = memref.alloc() : memref<4xf32>
  scf.if %c {
    // expected-note@+1 {{deallocated here}}
    memref.dealloc %a : memref<4xf32>
  } else {
    memref.dealloc %a : memref<4xf32>
  }
  // expected-error@+1 {{'memref.copy' op uses a buffer after it was deallocated (operand #0)}}
  memref.copy %a, %p : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// Every case of a rank switch deallocates it; the dealloc after is a second.
func.func @switch(%r: index) attributes {muir.entry} {
  %a = memref.alloc() : memref<4xf32>
  scf.index_switch %r
  case 0 {
    memref.dealloc %a : memref<4xf32>
    scf.yield
  }
  default {
    // expected-note@+1 {{deallocated here}}
    memref.dealloc %a : memref<4xf32>
  }
  // expected-error@+1 {{'memref.dealloc' op deallocates a buffer that was deallocated already}}
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// The CUDA target's buffers.
func.func @device_twice() attributes {muir.entry} {
  %a = gpu.alloc () : memref<4xf32>
  // expected-note@+1 {{deallocated here}}
  gpu.dealloc %a : memref<4xf32>
  // expected-error@+1 {{'gpu.dealloc' op deallocates a buffer that was deallocated already}}
  gpu.dealloc %a : memref<4xf32>
  return
}

// -----

// Accepted: one dealloc per buffer at the end of its block (as
// muir-lower-to-exec frees them); a buffer allocated and deallocated in
// each iteration; a dealloc in one branch only, or in a loop, which the
// analysis cannot order (never refused); a function that is not an entry.
func.func @well_formed(%c: i1, %p: memref<4xf32>) attributes {muir.entry} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  %v = memref.cast %a : memref<4xf32> to memref<?xf32>
  memref.copy %p, %a : memref<4xf32> to memref<4xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    %t = memref.alloc() : memref<4xf32>
    memref.copy %a, %t : memref<4xf32> to memref<4xf32>
    memref.dealloc %t : memref<4xf32>
  }
  %b = memref.alloc() : memref<4xf32>
  scf.if %c {
    memref.dealloc %b : memref<4xf32>
  }
  memref.copy %b, %p : memref<4xf32> to memref<4xf32>
  %d = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    memref.dealloc %d : memref<4xf32>
  }
  memref.dealloc %v : memref<?xf32>
  return
}
func.func @not_an_entry(%p: memref<4xf32>) {
  memref.dealloc %p : memref<4xf32>
  return
}
