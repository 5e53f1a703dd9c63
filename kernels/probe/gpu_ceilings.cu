// gpu_ceilings: the GPU's own memory-bandwidth and matrix-unit ceilings, measured in a
// few seconds, printed as one JSON object on stdout. hone compiles it with nvcc on the
// GPU host (src/roofline/gpu_probe.cc) and uses the figures as the roofline's
// ceilings, as the CPU probes do on CPU hosts.
//
//   read_gbs   a streaming read of 4 GiB with 16-byte loads (bytes read / time)
//   copy_gbs   cudaMemcpy device-to-device of 2 GiB (bytes read + written / time)
//   tflops     cuBLAS GEMM at 8192^3 on random data (never zeros), per dtype:
//              fp32 (no TF32), tf32, bf16 and fp16 (fp32 accumulate), int8 (int32 accumulate)
// Every figure is the best of several timed runs after warm-up (CUDA events).
// Build: nvcc -O3 -std=c++17 -arch=sm_XX gpu_ceilings.cu -lcublas -o gpu_ceilings
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t err_ = (x);                                                                  \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "gpu_ceilings: %s: %s\n", #x, cudaGetErrorString(err_));          \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
#define CHECK_CUBLAS(x)                                                                      \
  do {                                                                                       \
    cublasStatus_t st_ = (x);                                                                \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "gpu_ceilings: %s: cuBLAS status %d\n", #x, static_cast<int>(st_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

__device__ uint32_t Hash(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x);
}

// Fills `bytes` with pseudo-random bits; for float types the caller asks for values in
// [-1, 1) by `kind` (0 raw bytes, 1 fp32, 2 fp16/bf16 bits from fp32 via truncation-safe path).
__global__ void FillRandom(uint8_t* p, size_t bytes, uint32_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes / 4; i += stride) {
    reinterpret_cast<uint32_t*>(p)[i] = Hash(i, seed);
  }
}
__global__ void FillFloat(float* p, size_t n, uint32_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    p[i] = (Hash(i, seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}
// fp16 and bf16 values in [-1, 1) from fp32.
__global__ void FillHalfBits(uint16_t* p, size_t n, uint32_t seed, int bf16) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float f = (Hash(i, seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
    if (bf16) {
      p[i] = static_cast<uint16_t>(__float_as_uint(f) >> 16);
    } else {
      __half h = __float2half(f);
      p[i] = *reinterpret_cast<uint16_t*>(&h);
    }
  }
}

__global__ void __launch_bounds__(256) ReadKernel(const uint4* __restrict__ src, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;  // keeps the loads; practically never written
}

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  template <typename F>
  double BestMs(F&& f, int warmups, int runs) {
    for (int i = 0; i < warmups; ++i) f();
    CHECK_CUDA(cudaDeviceSynchronize());
    double best = 1e30;
    for (int i = 0; i < runs; ++i) {
      CHECK_CUDA(cudaEventRecord(a));
      f();
      CHECK_CUDA(cudaEventRecord(b));
      CHECK_CUDA(cudaEventSynchronize(b));
      CHECK_CUDA(cudaGetLastError());
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
      if (ms < best) best = ms;
    }
    return best;
  }
};

double GemmTflops(cublasHandle_t h, Timer& t, cudaDataType_t ab, cudaDataType_t c, cublasComputeType_t compute,
                  int n) {
  size_t elem_ab = ab == CUDA_R_32F ? 4 : ab == CUDA_R_8I ? 1 : 2;
  size_t elem_c = c == CUDA_R_32F || c == CUDA_R_32I ? 4 : 2;
  size_t nn = static_cast<size_t>(n) * n;
  void *A, *B, *C;
  CHECK_CUDA(cudaMalloc(&A, nn * elem_ab));
  CHECK_CUDA(cudaMalloc(&B, nn * elem_ab));
  CHECK_CUDA(cudaMalloc(&C, nn * elem_c));
  if (ab == CUDA_R_32F) {
    FillFloat<<<1024, 256>>>(static_cast<float*>(A), nn, 1);
    FillFloat<<<1024, 256>>>(static_cast<float*>(B), nn, 2);
  } else if (ab == CUDA_R_8I) {
    FillRandom<<<1024, 256>>>(static_cast<uint8_t*>(A), nn, 1);
    FillRandom<<<1024, 256>>>(static_cast<uint8_t*>(B), nn, 2);
  } else {
    FillHalfBits<<<1024, 256>>>(static_cast<uint16_t*>(A), nn, 1, ab == CUDA_R_16BF);
    FillHalfBits<<<1024, 256>>>(static_cast<uint16_t*>(B), nn, 2, ab == CUDA_R_16BF);
  }
  CHECK_CUDA(cudaGetLastError());
  float alpha_f = 1, beta_f = 0;
  int32_t alpha_i = 1, beta_i = 0;
  const void* alpha = compute == CUBLAS_COMPUTE_32I ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = compute == CUBLAS_COMPUTE_32I ? static_cast<const void*>(&beta_i) : &beta_f;
  // int8 GEMMs want A transposed (TN) for the fast path.
  cublasOperation_t ta = ab == CUDA_R_8I ? CUBLAS_OP_T : CUBLAS_OP_N;
  double ms = t.BestMs(
      [&] {
        CHECK_CUBLAS(cublasGemmEx(h, ta, CUBLAS_OP_N, n, n, n, alpha, A, ab, n, B, ab, n, beta, C, c, n, compute,
                                  CUBLAS_GEMM_DEFAULT));
      },
      3, 10);
  cudaFree(A);
  cudaFree(B);
  cudaFree(C);
  return 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3) / 1e12;
}

}  // namespace

int main() {
  int dev = 0;
  CHECK_CUDA(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  Timer t;

  const size_t read_bytes = size_t{4} << 30;
  uint4* buf;
  uint32_t* sink;
  CHECK_CUDA(cudaMalloc(&buf, read_bytes));
  CHECK_CUDA(cudaMalloc(&sink, 4));
  FillRandom<<<4096, 256>>>(reinterpret_cast<uint8_t*>(buf), read_bytes, 7);
  CHECK_CUDA(cudaGetLastError());
  int per_sm = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ReadKernel, 256, 0));
  int blocks = per_sm * prop.multiProcessorCount;
  double read_ms = t.BestMs([&] { ReadKernel<<<blocks, 256>>>(buf, read_bytes / 16, sink); }, 2, 10);
  const size_t copy_bytes = size_t{2} << 30;
  double copy_ms = t.BestMs(
      [&] {
        CHECK_CUDA(cudaMemcpyAsync(reinterpret_cast<char*>(buf) + copy_bytes, buf, copy_bytes, cudaMemcpyDeviceToDevice));
      },
      2, 10);
  cudaFree(buf);
  cudaFree(sink);

  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  const int n = 8192;
  double bf16 = GemmTflops(h, t, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, n);
  double fp16 = GemmTflops(h, t, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, n);
  double int8 = GemmTflops(h, t, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, n);
  double tf32 = GemmTflops(h, t, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, n);
  double fp32 = GemmTflops(h, t, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4096);
  cublasDestroy(h);

  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf(
      "{\"device\": \"%s\", \"sms\": %d, \"cc\": \"%d.%d\", \"memory_gb\": %.1f, \"driver\": %d, \"runtime\": %d, "
      "\"read_gbs\": %.1f, \"copy_gbs\": %.1f, "
      "\"tflops\": {\"fp32\": %.1f, \"tf32\": %.1f, \"bf16\": %.1f, \"fp16\": %.1f, \"int8\": %.1f}}\n",
      prop.name, prop.multiProcessorCount, prop.major, prop.minor, prop.totalGlobalMem / 1e9, driver, runtime,
      read_bytes / (read_ms * 1e-3) / 1e9, 2.0 * copy_bytes / (copy_ms * 1e-3) / 1e9, fp32, tf32, bf16, fp16, int8);
  return 0;
}
