// Device helpers shared by hone's kernel families: 16-byte vector access, bf16/fp8
// conversion, warp/block reductions, cp.async, ldmatrix and mma.sync wrappers, and the
// config-table plumbing behind the C ABI (include/hone_kernels.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "include/hone_kernels.h"

namespace hone_kb {

using bf16 = __nv_bfloat16;

__host__ __device__ constexpr int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// 8 bf16 in one 16-byte register bundle.
struct alignas(16) Bf16x8 {
  __nv_bfloat162 h[4];
};

__device__ __forceinline__ void Unpack8(const Bf16x8& v, float (&f)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 p = __bfloat1622float2(v.h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

__device__ __forceinline__ Bf16x8 Pack8(const float (&f)[8]) {
  Bf16x8 v;
#pragma unroll
  for (int i = 0; i < 4; ++i) v.h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

// Two floats to two saturating e4m3 bytes (round to nearest even), packed in 16 bits.
__device__ __forceinline__ uint16_t ToFp8x2(float a, float b) {
  return static_cast<uint16_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3));
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide reduction; every thread gets the result. `scratch` holds >= 32 floats and
// is reused across calls (the leading __syncthreads protects the previous call).
template <int THREADS, bool MAX>
__device__ __forceinline__ float BlockReduce(float v, float* scratch) {
  constexpr int kWarps = THREADS / 32;
  v = MAX ? WarpMax(v) : WarpSum(v);
  if constexpr (kWarps == 1) return v;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < kWarps ? scratch[lane] : (MAX ? 0.0f : 0.0f);
  return MAX ? WarpMax(r) : WarpSum(r);
}

// ---- Ampere/Hopper asynchronous copies and tensor-core fragments -------------------

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global->shared copy; src_bytes == 0 zero-fills the destination.
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(smem)), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(smem)));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(smem)));
}

// D = A(16x16 bf16, row) * B(16x8 bf16, col) + D (fp32).
__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t PackBf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// ---- config tables ------------------------------------------------------------------

// One row of a family's parameter space: a printable name, the kernel entry point (for
// cudaFuncGetAttributes) and the dynamic shared memory it needs (0 when shape-dependent).
struct ConfigInfo {
  const char* name;
  const void* func;
  int dynamic_smem;
};

inline int FillAttrs(const ConfigInfo& c, int* regs, int* local_bytes, int* static_smem, int* dynamic_smem,
                     int* max_threads) {
  cudaFuncAttributes a{};
  cudaError_t e = cudaFuncGetAttributes(&a, c.func);
  if (e != cudaSuccess) return static_cast<int>(e);
  if (regs) *regs = a.numRegs;
  if (local_bytes) *local_bytes = static_cast<int>(a.localSizeBytes);
  if (static_smem) *static_smem = static_cast<int>(a.sharedSizeBytes);
  if (dynamic_smem) *dynamic_smem = c.dynamic_smem;
  if (max_threads) *max_threads = a.maxThreadsPerBlock;
  return 0;
}

inline int LaunchStatus() { return static_cast<int>(cudaGetLastError()); }

}  // namespace hone_kb
