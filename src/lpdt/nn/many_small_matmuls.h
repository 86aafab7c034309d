#pragma once
// A batch of many small matrix products, out[i] = a[i] b[i] (attention's q k^T and p v: one
// product per node, sequence and head, e.g. 512 products of 40 x 32 by 32 x 40).
//
// Why not at::bmm: on the CPU, LibTorch 1.13 without MKL runs a bmm as a loop of single GEMM calls,
// and OpenBLAS (the OpenMP build) opens a parallel region for each, so a node-batched attention
// spends most of its time forking and joining threads (measured: 74% of a transformer step in
// libgomp). Here the products are split into one contiguous block per thread and each thread runs
// its block's bmm; inside the parallel region OpenBLAS runs single-threaded. On other devices this
// is at::matmul. Gradients: da = dout b^T, db = a^T dout, computed the same way.
#include <ATen/ATen.h>

namespace lpdt::nn {

// a: [N, m, n], b: [N, n, p] float -> [N, m, p]
at::Tensor many_small_matmuls(const at::Tensor& a, const at::Tensor& b);

}  // namespace lpdt::nn
