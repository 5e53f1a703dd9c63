// Family 1: fused residual add + RMSNorm + FP8 (e4m3) quantization.
//
// One CTA per token row. Each thread keeps its VPT 16-byte vectors of the row in
// registers across the three phases (sum of squares, normalise + max, quantise), so the
// row is read from DRAM once and written once (bf16 residual, fp8 output).
// Parameter space: THREADS x VPT (THREADS * 8 * VPT must cover the hidden size with no
// fully idle vector slot); the quantization mode picks the template instance.
#include "common.cuh"

namespace hone_kb {
namespace {

template <int THREADS, int VPT, bool PER_TOKEN>
__global__ void __launch_bounds__(THREADS)
    RmsnormFp8Kernel(const bf16* __restrict__ x, const bf16* __restrict__ residual, const bf16* __restrict__ weight,
                     bf16* __restrict__ residual_out, uint8_t* __restrict__ out, float* __restrict__ scale,
                     int hidden, float eps) {
  __shared__ float scratch[32];
  const int64_t row_off = static_cast<int64_t>(blockIdx.x) * hidden;
  const Bf16x8* xv = reinterpret_cast<const Bf16x8*>(x + row_off);
  const Bf16x8* rv = reinterpret_cast<const Bf16x8*>(residual + row_off);
  const Bf16x8* wv = reinterpret_cast<const Bf16x8*>(weight);
  Bf16x8* ov = reinterpret_cast<Bf16x8*>(residual_out + row_off);
  const int nvec = hidden / 8;

  float v[VPT][8];
  float sum_sq = 0.0f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * THREADS + threadIdx.x;
    if (c < nvec) {
      float a[8], b[8];
      Unpack8(xv[c], a);
      Unpack8(rv[c], b);
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] += b[j];
      const Bf16x8 r = Pack8(a);
      ov[c] = r;
      Unpack8(r, v[i]);  // the norm is taken over the stored (rounded) residual
#pragma unroll
      for (int j = 0; j < 8; ++j) sum_sq += v[i][j] * v[i][j];
    }
  }
  sum_sq = BlockReduce<THREADS, false>(sum_sq, scratch);
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(hidden) + eps);

  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * THREADS + threadIdx.x;
    if (c < nvec) {
      float w[8];
      Unpack8(wv[c], w);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        v[i][j] = v[i][j] * inv_rms * w[j];
        amax = fmaxf(amax, fabsf(v[i][j]));
      }
    }
  }
  float s;
  if constexpr (PER_TOKEN) {
    amax = BlockReduce<THREADS, true>(amax, scratch);
    s = fmaxf(amax / 448.0f, 1e-12f);
    if (threadIdx.x == 0) scale[blockIdx.x] = s;
  } else {
    s = scale[0];
  }
  const float inv_s = 1.0f / s;
  uint2* qv = reinterpret_cast<uint2*>(out + row_off);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c = i * THREADS + threadIdx.x;
    if (c < nvec) {
      uint2 packed;
      packed.x = static_cast<uint32_t>(ToFp8x2(v[i][0] * inv_s, v[i][1] * inv_s)) |
                 (static_cast<uint32_t>(ToFp8x2(v[i][2] * inv_s, v[i][3] * inv_s)) << 16);
      packed.y = static_cast<uint32_t>(ToFp8x2(v[i][4] * inv_s, v[i][5] * inv_s)) |
                 (static_cast<uint32_t>(ToFp8x2(v[i][6] * inv_s, v[i][7] * inv_s)) << 16);
      qv[c] = packed;
    }
  }
}

using RmsFn = void (*)(const bf16*, const bf16*, const bf16*, bf16*, uint8_t*, float*, int, float);

struct RmsConfig {
  int threads;
  int vpt;
  RmsFn static_fn;
  RmsFn per_token_fn;
  const char* name;
};

#define HONE_RMS_CONFIG(T, V) \
  RmsConfig{T, V, &RmsnormFp8Kernel<T, V, false>, &RmsnormFp8Kernel<T, V, true>, "threads=" #T ",vpt=" #V},

const RmsConfig kRmsConfigs[] = {
    HONE_RMS_CONFIG(64, 8) HONE_RMS_CONFIG(64, 10) HONE_RMS_CONFIG(64, 12) HONE_RMS_CONFIG(64, 16)
    HONE_RMS_CONFIG(128, 4) HONE_RMS_CONFIG(128, 5) HONE_RMS_CONFIG(128, 6) HONE_RMS_CONFIG(128, 8)
    HONE_RMS_CONFIG(256, 2) HONE_RMS_CONFIG(256, 3) HONE_RMS_CONFIG(256, 4)
    HONE_RMS_CONFIG(512, 1) HONE_RMS_CONFIG(512, 2) HONE_RMS_CONFIG(1024, 1)};
constexpr int kNumRmsConfigs = sizeof(kRmsConfigs) / sizeof(kRmsConfigs[0]);

}  // namespace

int RmsnormNumConfigs() { return kNumRmsConfigs; }
const char* RmsnormConfigName(int i) { return kRmsConfigs[i].name; }
ConfigInfo RmsnormConfigInfo(int i) {
  return {kRmsConfigs[i].name, reinterpret_cast<const void*>(kRmsConfigs[i].per_token_fn), 0};
}

}  // namespace hone_kb

extern "C" int hone_kb_rmsnorm_fp8(int config, const void* x, const void* residual, const void* weight,
                                   void* residual_out, void* out, float* scale, int quant_mode, int tokens,
                                   int hidden, float eps, void* stream) {
  using namespace hone_kb;
  if (config < 0 || config >= kNumRmsConfigs || tokens < 0 || hidden <= 0 || hidden % 8 != 0 ||
      (quant_mode != 0 && quant_mode != 1)) {
    return HONE_KB_INVALID_CONFIG;
  }
  const RmsConfig& c = kRmsConfigs[config];
  const int nvec = hidden / 8;
  // Every vector slot but the last round must be busy, and the slots must cover the row.
  if (c.threads * c.vpt < nvec || c.threads * (c.vpt - 1) >= nvec) return HONE_KB_INVALID_CONFIG;
  if (tokens == 0) return 0;
  RmsFn fn = quant_mode == 1 ? c.per_token_fn : c.static_fn;
  fn<<<tokens, c.threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const bf16*>(x), static_cast<const bf16*>(residual), static_cast<const bf16*>(weight),
      static_cast<bf16*>(residual_out), static_cast<uint8_t*>(out), scale, hidden, eps);
  return LaunchStatus();
}
