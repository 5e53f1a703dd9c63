// Family 3: paged GQA decode attention (one query token per sequence), split-KV.
//
// Grid (num_splits, kv_heads, batch). A CTA owns one kv head of one sequence and one
// split of its keys, and computes all G = q_heads / kv_heads query heads of that group,
// so each K/V row is read from DRAM once per group. Two variants:
//  * mma: each warp streams its own tiles of WT tokens through a STAGES-deep cp.async
//    ring in shared memory (page-table gather, XOR-swizzled rows), and computes
//    S = Q K^T and O += P V with mma.sync m16n8k16 (the G heads are the 16 rows, padded),
//    online softmax in registers (FlashAttention-2 layout reuse of P).
//  * simt: one token per warp step, lanes split the head dim; a simple fallback.
// The warps' partial (m, l, O) are merged in shared memory; with one split the CTA
// writes the bf16 output, otherwise (O/l, log2-sum-exp) go to the workspace and a small
// combine kernel merges the splits. (Merging in the last-arriving split CTA instead was
// measured slower: bench/results/README.md.)
#include <math.h>

#include "common.cuh"

namespace hone_kb {
namespace {

constexpr int kD = 128;       // head dim
constexpr int kRows = 16;     // query heads per group, padded to the mma M dimension
constexpr float kNegInf = -INFINITY;

struct DecodeArgs {
  const bf16* q;
  const bf16* k_cache;
  const bf16* v_cache;
  const int32_t* block_tables;
  const int32_t* seq_lens;
  bf16* out;
  float* ws_o;    // [batch, q_heads, splits, kD]
  float* ws_lse;  // [batch, q_heads, splits]
  int num_q_heads;
  int num_kv_heads;
  int page_shift;
  int max_blocks;
  float scale_log2;
  int num_splits;
};

// Shared-memory merge of NW warps' partial rows, then the CTA's output or partial.
// so: [NW][kRows][kD] unnormalised O, sm/sl: [NW][kRows] running max (raw score units)
// and sum of exp.
template <int NW>
__device__ void MergeWarpsAndStore(const DecodeArgs& a, const float* so, const float* sm, const float* sl, int group) {
  const int b = blockIdx.z, kvh = blockIdx.y, split = blockIdx.x;
  for (int idx = threadIdx.x; idx < group * kD; idx += NW * 32) {
    const int row = idx / kD, d = idx % kD;
    float m = kNegInf;
#pragma unroll
    for (int w = 0; w < NW; ++w) m = fmaxf(m, sm[w * kRows + row]);
    float l = 0.0f, o = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      const float mw = sm[w * kRows + row];
      const float f = mw == kNegInf ? 0.0f : exp2f((mw - m) * a.scale_log2);
      l += f * sl[w * kRows + row];
      o += f * so[(w * kRows + row) * kD + d];
    }
    const int64_t bh = static_cast<int64_t>(b) * a.num_q_heads + kvh * group + row;
    if (a.num_splits == 1) {
      a.out[bh * kD + d] = __float2bfloat16_rn(l > 0.0f ? o / l : 0.0f);
    } else {
      const int64_t bhs = bh * a.num_splits + split;
      a.ws_o[bhs * kD + d] = l > 0.0f ? o / l : 0.0f;
      if (d == 0) a.ws_lse[bhs] = l > 0.0f ? m * a.scale_log2 + log2f(l) : kNegInf;
    }
  }
}

// The range of WT-token tiles this CTA's split covers.
template <int WT>
__device__ __forceinline__ void SplitTiles(int seq_len, int num_splits, int* tile_begin, int* n_tiles) {
  const int tiles_total = CeilDiv(seq_len, WT);
  const int per_split = CeilDiv(tiles_total, num_splits);
  *tile_begin = blockIdx.x * per_split;
  *n_tiles = max(min(*tile_begin + per_split, tiles_total) - *tile_begin, 0);
}

template <int NW, int WT, int STAGES>
__global__ void __launch_bounds__(NW * 32) PagedDecodeMmaKernel(DecodeArgs a) {
  static_assert(WT % 16 == 0, "warp tile is a whole number of 16-token mma steps");
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const int b = blockIdx.z, kvh = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = a.num_q_heads / a.num_kv_heads;
  const int seq_len = a.seq_lens[b];
  int tile_begin, n_tiles;
  SplitTiles<WT>(seq_len, a.num_splits, &tile_begin, &n_tiles);
  const int my_tiles = n_tiles > warp ? CeilDiv(n_tiles - warp, NW) : 0;

  constexpr int kTileElems = WT * kD;
  bf16* wsm = reinterpret_cast<bf16*>(smem_raw) + warp * STAGES * 2 * kTileElems;
  const int32_t* table = a.block_tables + static_cast<int64_t>(b) * a.max_blocks;
  const int page_mask = (1 << a.page_shift) - 1;

  // Q as the A operand: rows r0 = lane/4 and r1 = r0 + 8 are query heads of the group.
  const int r0 = lane / 4, r1 = r0 + 8, cq = (lane % 4) * 2;
  uint32_t qa[kD / 16][4];
  {
    const bf16* qb = a.q + (static_cast<int64_t>(b) * a.num_q_heads + kvh * group) * kD;
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      const int c = ks * 16 + cq;
      qa[ks][0] = r0 < group ? *reinterpret_cast<const uint32_t*>(qb + r0 * kD + c) : 0u;
      qa[ks][1] = r1 < group ? *reinterpret_cast<const uint32_t*>(qb + r1 * kD + c) : 0u;
      qa[ks][2] = r0 < group ? *reinterpret_cast<const uint32_t*>(qb + r0 * kD + c + 8) : 0u;
      qa[ks][3] = r1 < group ? *reinterpret_cast<const uint32_t*>(qb + r1 * kD + c + 8) : 0u;
    }
  }

  // Issues the cp.async gather of warp-local tile i into ring stage `stage`.
  auto load_tile = [&](int i, int stage) {
    const int tok0 = (tile_begin + warp + i * NW) * WT;
    bf16* ks = wsm + stage * 2 * kTileElems;
    bf16* vs = ks + kTileElems;
    const int cc = lane & 15;
#pragma unroll
    for (int it = 0; it < WT / 2; ++it) {
      const int r = it * 2 + (lane >> 4);
      const int t = tok0 + r;
      const bool valid = t < seq_len;
      int64_t off = 0;
      if (valid) {
        const int64_t page = table[t >> a.page_shift];
        off = (((page << a.page_shift) + (t & page_mask)) * a.num_kv_heads + kvh) * kD + cc * 8;
      }
      const int dst = r * kD + ((cc ^ (r & 7)) * 8);
      CpAsync16(ks + dst, a.k_cache + off, valid ? 16 : 0);
      CpAsync16(vs + dst, a.v_cache + off, valid ? 16 : 0);
    }
  };

  float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;
  float acc[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < my_tiles) load_tile(s, s);
    CpAsyncCommit();
  }
  const int mi = lane >> 3, ri = lane & 7;
#pragma unroll 1
  for (int i = 0; i < my_tiles; ++i) {
    if (i + STAGES - 1 < my_tiles) load_tile(i + STAGES - 1, (i + STAGES - 1) % STAGES);
    CpAsyncCommit();
    CpAsyncWait<STAGES - 1>();
    __syncwarp();
    const bf16* ks = wsm + (i % STAGES) * 2 * kTileElems;
    const bf16* vs = ks + kTileElems;
    const int tok0 = (tile_begin + warp + i * NW) * WT;

    // S = Q K^T over WT tokens (WT/8 n-tiles).
    float s[WT / 8][4];
#pragma unroll
    for (int n = 0; n < WT / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kstep = 0; kstep < kD / 16; ++kstep) {
#pragma unroll
      for (int np = 0; np < WT / 16; ++np) {
        const int row = np * 16 + (mi >> 1) * 8 + ri;
        const int chunk = kstep * 2 + (mi & 1);
        uint32_t kb[4];
        LdMatrixX4(kb, ks + row * kD + ((chunk ^ (row & 7)) * 8));
        MmaBf16(s[2 * np], qa[kstep], kb[0], kb[1]);
        MmaBf16(s[2 * np + 1], qa[kstep], kb[2], kb[3]);
      }
    }

    // Online softmax; each thread holds rows r0 (s[.][0..1]) and r1 (s[.][2..3]).
    float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
    for (int n = 0; n < WT / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (tok0 + n * 8 + cq + e >= seq_len) {
          s[n][e] = kNegInf;
          s[n][2 + e] = kNegInf;
        }
        mx0 = fmaxf(mx0, s[n][e]);
        mx1 = fmaxf(mx1, s[n][2 + e]);
      }
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    // A tile always holds one valid token, so the new maxima are finite.
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    const float corr0 = exp2f((m0 - mn0) * a.scale_log2), corr1 = exp2f((m1 - mn1) * a.scale_log2);
    m0 = mn0;
    m1 = mn1;
    const float base0 = mn0 * a.scale_log2, base1 = mn1 * a.scale_log2;
    float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
    for (int n = 0; n < WT / 8; ++n) {
      s[n][0] = exp2f(s[n][0] * a.scale_log2 - base0);
      s[n][1] = exp2f(s[n][1] * a.scale_log2 - base0);
      s[n][2] = exp2f(s[n][2] * a.scale_log2 - base1);
      s[n][3] = exp2f(s[n][3] * a.scale_log2 - base1);
      ps0 += s[n][0] + s[n][1];
      ps1 += s[n][2] + s[n][3];
    }
    l0 = l0 * corr0 + ps0;
    l1 = l1 * corr1 + ps1;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      acc[n][0] *= corr0;
      acc[n][1] *= corr0;
      acc[n][2] *= corr1;
      acc[n][3] *= corr1;
    }

    // O += P V: P's accumulator layout is reused as the A operand (16 tokens per k-step).
#pragma unroll
    for (int kk = 0; kk < WT / 16; ++kk) {
      uint32_t pa[4];
      pa[0] = PackBf16x2(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = PackBf16x2(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = PackBf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = PackBf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        const int row = kk * 16 + (mi & 1) * 8 + ri;
        const int chunk = dp * 2 + (mi >> 1);
        uint32_t vb[4];
        LdMatrixX4Trans(vb, vs + row * kD + ((chunk ^ (row & 7)) * 8));
        MmaBf16(acc[2 * dp], pa, vb[0], vb[1]);
        MmaBf16(acc[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
    __syncwarp();
  }
  CpAsyncWait<0>();

  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  __syncthreads();  // every warp is done with its ring: reuse shared memory for the merge
  float* so = reinterpret_cast<float*>(smem_raw);
  float* sm = so + NW * kRows * kD;
  float* sl = sm + NW * kRows;
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
    so[(warp * kRows + r0) * kD + n * 8 + cq] = acc[n][0];
    so[(warp * kRows + r0) * kD + n * 8 + cq + 1] = acc[n][1];
    so[(warp * kRows + r1) * kD + n * 8 + cq] = acc[n][2];
    so[(warp * kRows + r1) * kD + n * 8 + cq + 1] = acc[n][3];
  }
  if ((lane & 3) == 0) {
    sm[warp * kRows + r0] = m0;
    sm[warp * kRows + r1] = m1;
    sl[warp * kRows + r0] = l0;
    sl[warp * kRows + r1] = l1;
  }
  __syncthreads();
  MergeWarpsAndStore<NW>(a, so, sm, sl, group);
}

// Fallback: warp per token step, lanes split the head dim 4 ways (8-byte loads).
template <int NW>
__global__ void __launch_bounds__(NW * 32) PagedDecodeSimtKernel(DecodeArgs a) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const int b = blockIdx.z, kvh = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = a.num_q_heads / a.num_kv_heads;
  const int seq_len = a.seq_lens[b];
  int tile_begin, n_tiles;
  SplitTiles<16>(seq_len, a.num_splits, &tile_begin, &n_tiles);
  const int t_begin = tile_begin * 16;
  const int t_end = min((tile_begin + n_tiles) * 16, seq_len);
  const int32_t* table = a.block_tables + static_cast<int64_t>(b) * a.max_blocks;
  const int page_mask = (1 << a.page_shift) - 1;

  float qf[kRows][4], o[kRows][4], m[kRows], l[kRows];
  const bf16* qb = a.q + (static_cast<int64_t>(b) * a.num_q_heads + kvh * group) * kD;
#pragma unroll
  for (int g = 0; g < kRows; ++g) {
    m[g] = kNegInf;
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      qf[g][j] = g < group ? __bfloat162float(qb[g * kD + lane * 4 + j]) : 0.0f;
      o[g][j] = 0.0f;
    }
  }
#pragma unroll 1
  for (int t = t_begin + warp; t < t_end; t += NW) {
    const int64_t page = table[t >> a.page_shift];
    const int64_t off = (((page << a.page_shift) + (t & page_mask)) * a.num_kv_heads + kvh) * kD + lane * 4;
    const uint2 kr = *reinterpret_cast<const uint2*>(a.k_cache + off);
    const uint2 vr = *reinterpret_cast<const uint2*>(a.v_cache + off);
    const float2 k01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&kr.x));
    const float2 k23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&kr.y));
    const float2 v01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&vr.x));
    const float2 v23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&vr.y));
#pragma unroll
    for (int g = 0; g < kRows; ++g) {
      if (g < group) {
        const float sc = WarpSum(qf[g][0] * k01.x + qf[g][1] * k01.y + qf[g][2] * k23.x + qf[g][3] * k23.y);
        const float mn = fmaxf(m[g], sc);
        const float corr = exp2f((m[g] - mn) * a.scale_log2);
        const float p = exp2f((sc - mn) * a.scale_log2);
        m[g] = mn;
        l[g] = l[g] * corr + p;
        o[g][0] = o[g][0] * corr + p * v01.x;
        o[g][1] = o[g][1] * corr + p * v01.y;
        o[g][2] = o[g][2] * corr + p * v23.x;
        o[g][3] = o[g][3] * corr + p * v23.y;
      }
    }
  }
  float* so = reinterpret_cast<float*>(smem_raw);
  float* sm = so + NW * kRows * kD;
  float* sl = sm + NW * kRows;
#pragma unroll
  for (int g = 0; g < kRows; ++g) {
#pragma unroll
    for (int j = 0; j < 4; ++j) so[(warp * kRows + g) * kD + lane * 4 + j] = o[g][j];
    if (lane == 0) {
      sm[warp * kRows + g] = m[g];
      sl[warp * kRows + g] = l[g];
    }
  }
  __syncthreads();
  MergeWarpsAndStore<NW>(a, so, sm, sl, group);
}

__global__ void __launch_bounds__(kD) DecodeCombineKernel(const float* __restrict__ ws_o,
                                                          const float* __restrict__ ws_lse, bf16* __restrict__ out,
                                                          int num_splits) {
  const int64_t bh = blockIdx.x;
  const float* lse = ws_lse + bh * num_splits;
  float mx = kNegInf;
  for (int s = 0; s < num_splits; ++s) mx = fmaxf(mx, lse[s]);
  float w_sum = 0.0f, o = 0.0f;
  for (int s = 0; s < num_splits; ++s) {
    const float ls = lse[s];
    if (ls == kNegInf) continue;
    const float w = exp2f(ls - mx);
    w_sum += w;
    o += w * ws_o[(bh * num_splits + s) * kD + threadIdx.x];
  }
  out[bh * kD + threadIdx.x] = __float2bfloat16_rn(w_sum > 0.0f ? o / w_sum : 0.0f);
}

using DecodeFn = void (*)(DecodeArgs);

struct DecodeConfig {
  int warps;
  int smem_bytes;  // dynamic shared memory of one CTA
  DecodeFn fn;
  const char* name;
};

constexpr int MergeSmem(int nw) { return nw * (kRows * kD + 2 * kRows) * 4; }
constexpr int MmaSmem(int nw, int wt, int stages) {
  return nw * stages * 2 * wt * kD * 2 > MergeSmem(nw) ? nw * stages * 2 * wt * kD * 2 : MergeSmem(nw);
}

#define HONE_DECODE_MMA(NW, WT, ST)                                                 \
  DecodeConfig{NW, MmaSmem(NW, WT, ST), &PagedDecodeMmaKernel<NW, WT, ST>,         \
               "variant=mma,warps=" #NW ",warp_tile=" #WT ",stages=" #ST},
#define HONE_DECODE_SIMT(NW) \
  DecodeConfig{NW, MergeSmem(NW), &PagedDecodeSimtKernel<NW>, "variant=simt,warps=" #NW},

// Every config fits the 227 KiB per-CTA shared-memory limit of sm_90.
const DecodeConfig kDecodeConfigs[] = {
    HONE_DECODE_MMA(2, 16, 2) HONE_DECODE_MMA(2, 16, 3) HONE_DECODE_MMA(2, 16, 4)
    HONE_DECODE_MMA(2, 32, 2) HONE_DECODE_MMA(2, 32, 3) HONE_DECODE_MMA(2, 32, 4)
    HONE_DECODE_MMA(4, 16, 2) HONE_DECODE_MMA(4, 16, 3) HONE_DECODE_MMA(4, 16, 4)
    HONE_DECODE_MMA(4, 32, 2) HONE_DECODE_MMA(4, 32, 3)
    HONE_DECODE_MMA(8, 16, 2) HONE_DECODE_MMA(8, 16, 3)
    HONE_DECODE_SIMT(4) HONE_DECODE_SIMT(8)};
constexpr int kNumDecodeConfigs = sizeof(kDecodeConfigs) / sizeof(kDecodeConfigs[0]);
static_assert(MmaSmem(4, 32, 3) <= 227 * 1024 && MmaSmem(8, 16, 3) <= 227 * 1024 && MmaSmem(2, 32, 4) <= 227 * 1024,
              "configs must fit sm_90 shared memory");

}  // namespace

int DecodeNumConfigs() { return kNumDecodeConfigs; }

// Raises each config's dynamic shared-memory limit (hone_kb_prepare; before any capture).
int DecodePrepare() {
  for (const DecodeConfig& c : kDecodeConfigs) {
    cudaError_t e = cudaFuncSetAttribute(c.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem_bytes);
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  return 0;
}
ConfigInfo DecodeConfigInfo(int i) {
  return {kDecodeConfigs[i].name, reinterpret_cast<const void*>(kDecodeConfigs[i].fn), kDecodeConfigs[i].smem_bytes};
}

}  // namespace hone_kb

extern "C" size_t hone_kb_paged_decode_workspace_bytes(int batch, int num_q_heads, int head_dim, int num_splits) {
  if (num_splits <= 1) return 0;
  const size_t rows = static_cast<size_t>(batch) * num_q_heads * num_splits;
  return rows * head_dim * sizeof(float) + rows * sizeof(float);
}

extern "C" int hone_kb_paged_decode(int config, int num_splits, const void* q, const void* k_cache,
                                    const void* v_cache, const int32_t* block_tables, const int32_t* seq_lens,
                                    void* out, void* workspace, int batch, int num_q_heads, int num_kv_heads,
                                    int head_dim, int page_size, int max_blocks_per_seq, float scale, void* stream) {
  using namespace hone_kb;
  if (config < 0 || config >= kNumDecodeConfigs || head_dim != kD || num_splits < 1 || num_splits > 1024 ||
      batch < 0 || num_kv_heads <= 0 || num_q_heads % num_kv_heads != 0 || num_q_heads / num_kv_heads > kRows ||
      page_size <= 0 || (page_size & (page_size - 1)) != 0 || max_blocks_per_seq <= 0 ||
      (num_splits > 1 && workspace == nullptr)) {
    return HONE_KB_INVALID_CONFIG;
  }
  if (batch == 0) return 0;
  const DecodeConfig& c = kDecodeConfigs[config];
  int page_shift = 0;
  while ((1 << page_shift) < page_size) ++page_shift;
  DecodeArgs a{};
  a.q = static_cast<const bf16*>(q);
  a.k_cache = static_cast<const bf16*>(k_cache);
  a.v_cache = static_cast<const bf16*>(v_cache);
  a.block_tables = block_tables;
  a.seq_lens = seq_lens;
  a.out = static_cast<bf16*>(out);
  const size_t rows = static_cast<size_t>(batch) * num_q_heads * num_splits;
  a.ws_o = static_cast<float*>(workspace);
  a.ws_lse = workspace ? static_cast<float*>(workspace) + rows * kD : nullptr;
  a.num_q_heads = num_q_heads;
  a.num_kv_heads = num_kv_heads;
  a.page_shift = page_shift;
  a.max_blocks = max_blocks_per_seq;
  a.scale_log2 = scale * 1.4426950408889634f;
  a.num_splits = num_splits;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dim3 grid(num_splits, num_kv_heads, batch);
  c.fn<<<grid, c.warps * 32, c.smem_bytes, s>>>(a);
  int st = LaunchStatus();
  if (st != 0 || num_splits == 1) return st;
  DecodeCombineKernel<<<batch * num_q_heads, kD, 0, s>>>(a.ws_o, a.ws_lse, a.out, num_splits);
  return LaunchStatus();
}
