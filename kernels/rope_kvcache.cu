// Family 2: neox RoPE on q and k fused with the paged KV-cache write.
//
// One CTA handles TOK tokens. A thread owns a fixed slice of VEC rotation pairs of the
// head dimension, so it loads cos/sin for its slice once per token and reuses them for
// every q and k head it rotates; k is rotated straight into its cache slot (it never
// round-trips through DRAM), v is copied to its slot with 16-byte accesses.
// Parameter space: VEC (pairs per thread) x THREADS x TOK.
#include "common.cuh"

namespace hone_kb {
namespace {

constexpr int kRopeHeadDim = 128;

template <int VEC>
struct alignas(2 * VEC) Bf16Vec {
  bf16 v[VEC];
};

template <int VEC, int THREADS, int TOK>
__global__ void __launch_bounds__(THREADS)
    RopeKvCacheKernel(const int64_t* __restrict__ positions, const bf16* __restrict__ q, const bf16* __restrict__ k,
                      const bf16* __restrict__ v, const bf16* __restrict__ cos_sin,
                      const int64_t* __restrict__ slot_mapping, bf16* __restrict__ q_out, bf16* __restrict__ k_cache,
                      bf16* __restrict__ v_cache, int tokens, int num_q_heads, int num_kv_heads) {
  constexpr int D = kRopeHeadDim;
  constexpr int kHalf = D / 2;
  constexpr int kLanesPerHead = kHalf / VEC;
  constexpr int kHeadsPerPass = THREADS / kLanesPerHead;
  static_assert(THREADS % kLanesPerHead == 0, "a head's lanes must not straddle passes");
  using Vec = Bf16Vec<VEC>;
  const int slice = threadIdx.x % kLanesPerHead;
  const int head0 = threadIdx.x / kLanesPerHead;
  const int heads = num_q_heads + num_kv_heads;

#pragma unroll 1
  for (int tt = 0; tt < TOK; ++tt) {
    const int64_t t = static_cast<int64_t>(blockIdx.x) * TOK + tt;
    if (t >= tokens) return;
    const int64_t pos = positions[t];
    const int64_t slot = slot_mapping[t];
    float c[VEC], s[VEC];
    {
      const Vec cv = *reinterpret_cast<const Vec*>(cos_sin + pos * D + slice * VEC);
      const Vec sv = *reinterpret_cast<const Vec*>(cos_sin + pos * D + kHalf + slice * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        c[j] = __bfloat162float(cv.v[j]);
        s[j] = __bfloat162float(sv.v[j]);
      }
    }
    for (int h = head0; h < heads; h += kHeadsPerPass) {
      const bf16* src;
      bf16* dst;
      if (h < num_q_heads) {
        src = q + (t * num_q_heads + h) * D;
        dst = q_out + (t * num_q_heads + h) * D;
      } else {
        if (slot < 0) continue;
        const int kh = h - num_q_heads;
        src = k + (t * num_kv_heads + kh) * D;
        dst = k_cache + (slot * num_kv_heads + kh) * D;
      }
      const Vec x1 = *reinterpret_cast<const Vec*>(src + slice * VEC);
      const Vec x2 = *reinterpret_cast<const Vec*>(src + kHalf + slice * VEC);
      Vec o1, o2;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float a = __bfloat162float(x1.v[j]);
        const float b = __bfloat162float(x2.v[j]);
        o1.v[j] = __float2bfloat16_rn(a * c[j] - b * s[j]);
        o2.v[j] = __float2bfloat16_rn(b * c[j] + a * s[j]);
      }
      *reinterpret_cast<Vec*>(dst + slice * VEC) = o1;
      *reinterpret_cast<Vec*>(dst + kHalf + slice * VEC) = o2;
    }
    if (slot >= 0) {
      const int chunks = num_kv_heads * D / 8;
      const Bf16x8* vs = reinterpret_cast<const Bf16x8*>(v + t * num_kv_heads * D);
      Bf16x8* vd = reinterpret_cast<Bf16x8*>(v_cache + slot * num_kv_heads * D);
      for (int i = threadIdx.x; i < chunks; i += THREADS) vd[i] = vs[i];
    }
  }
}

using RopeFn = void (*)(const int64_t*, const bf16*, const bf16*, const bf16*, const bf16*, const int64_t*, bf16*,
                        bf16*, bf16*, int, int, int);

struct RopeConfig {
  int threads;
  int tok;
  RopeFn fn;
  const char* name;
};

#define HONE_ROPE_CONFIG(V, T, K) \
  RopeConfig{T, K, &RopeKvCacheKernel<V, T, K>, "vec=" #V ",threads=" #T ",tokens_per_cta=" #K},
#define HONE_ROPE_CONFIGS_V(V)                                                                       \
  HONE_ROPE_CONFIG(V, 64, 1) HONE_ROPE_CONFIG(V, 64, 2) HONE_ROPE_CONFIG(V, 64, 4)                   \
  HONE_ROPE_CONFIG(V, 128, 1) HONE_ROPE_CONFIG(V, 128, 2) HONE_ROPE_CONFIG(V, 128, 4)                \
  HONE_ROPE_CONFIG(V, 256, 1) HONE_ROPE_CONFIG(V, 256, 2) HONE_ROPE_CONFIG(V, 256, 4)                \
  HONE_ROPE_CONFIG(V, 512, 1) HONE_ROPE_CONFIG(V, 512, 2) HONE_ROPE_CONFIG(V, 512, 4)

const RopeConfig kRopeConfigs[] = {HONE_ROPE_CONFIGS_V(8) HONE_ROPE_CONFIGS_V(4) HONE_ROPE_CONFIGS_V(2)};
constexpr int kNumRopeConfigs = sizeof(kRopeConfigs) / sizeof(kRopeConfigs[0]);

}  // namespace

int RopeNumConfigs() { return kNumRopeConfigs; }
ConfigInfo RopeConfigInfo(int i) { return {kRopeConfigs[i].name, reinterpret_cast<const void*>(kRopeConfigs[i].fn), 0}; }

}  // namespace hone_kb

extern "C" int hone_kb_rope_kvcache(int config, const int64_t* positions, const void* q, const void* k,
                                    const void* v, const void* cos_sin, const int64_t* slot_mapping, void* q_out,
                                    void* k_cache, void* v_cache, int tokens, int num_q_heads, int num_kv_heads,
                                    int head_dim, void* stream) {
  using namespace hone_kb;
  if (config < 0 || config >= kNumRopeConfigs || head_dim != kRopeHeadDim || tokens < 0 || num_q_heads <= 0 ||
      num_kv_heads <= 0) {
    return HONE_KB_INVALID_CONFIG;
  }
  if (tokens == 0) return 0;
  const RopeConfig& c = kRopeConfigs[config];
  const int blocks = CeilDiv(tokens, c.tok);
  c.fn<<<blocks, c.threads, 0, static_cast<cudaStream_t>(stream)>>>(
      positions, static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
      static_cast<const bf16*>(cos_sin), slot_mapping, static_cast<bf16*>(q_out), static_cast<bf16*>(k_cache),
      static_cast<bf16*>(v_cache), tokens, num_q_heads, num_kv_heads);
  return LaunchStatus();
}
