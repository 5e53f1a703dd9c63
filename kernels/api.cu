// The family-independent part of the C ABI: config enumeration, compiler resource use,
// one-time preparation, and the bandwidth-ceiling probes (streaming copy and read).
#include "common.cuh"

namespace hone_kb {

int RmsnormNumConfigs();
ConfigInfo RmsnormConfigInfo(int i);
int RopeNumConfigs();
ConfigInfo RopeConfigInfo(int i);
int DecodeNumConfigs();
ConfigInfo DecodeConfigInfo(int i);
int DecodePrepare();

namespace {

bool Lookup(int family, int index, ConfigInfo* out) {
  switch (family) {
    case kHoneKbRmsnormFp8:
      if (index < 0 || index >= RmsnormNumConfigs()) return false;
      *out = RmsnormConfigInfo(index);
      return true;
    case kHoneKbRopeKvCache:
      if (index < 0 || index >= RopeNumConfigs()) return false;
      *out = RopeConfigInfo(index);
      return true;
    case kHoneKbPagedDecode:
      if (index < 0 || index >= DecodeNumConfigs()) return false;
      *out = DecodeConfigInfo(index);
      return true;
    default:
      return false;
  }
}

constexpr int kProbeThreads = 256;
constexpr int kProbeUnroll = 4;

__global__ void __launch_bounds__(kProbeThreads) CopyKernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                            size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kProbeThreads;
  size_t i = static_cast<size_t>(blockIdx.x) * kProbeThreads + threadIdx.x;
  for (; i + (kProbeUnroll - 1) * stride < n; i += kProbeUnroll * stride) {
    uint4 r[kProbeUnroll];
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) r[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) dst[i + u * stride] = r[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void __launch_bounds__(kProbeThreads) ReadKernel(const uint4* __restrict__ src, size_t n,
                                                            float* __restrict__ sink, int sink_len) {
  __shared__ float scratch[32];
  const size_t stride = static_cast<size_t>(gridDim.x) * kProbeThreads;
  size_t i = static_cast<size_t>(blockIdx.x) * kProbeThreads + threadIdx.x;
  float acc = 0.0f;
  for (; i + (kProbeUnroll - 1) * stride < n; i += kProbeUnroll * stride) {
    uint4 r[kProbeUnroll];
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) r[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) {
      acc += __uint_as_float(r[u].x) + __uint_as_float(r[u].y) + __uint_as_float(r[u].z) + __uint_as_float(r[u].w);
    }
  }
  for (; i < n; i += stride) {
    const uint4 r = src[i];
    acc += __uint_as_float(r.x) + __uint_as_float(r.y) + __uint_as_float(r.z) + __uint_as_float(r.w);
  }
  acc = BlockReduce<kProbeThreads, false>(acc, scratch);
  if (threadIdx.x == 0) sink[blockIdx.x % sink_len] = acc;
}

int ProbeBlocks() {
  int device = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, CopyKernel, kProbeThreads, 0);
  return (sms > 0 ? sms : 132) * (per_sm > 0 ? per_sm : 8);
}

}  // namespace
}  // namespace hone_kb

extern "C" int hone_kb_abi_version(void) { return HONE_KB_ABI_VERSION; }

extern "C" int hone_kb_prepare(void) { return hone_kb::DecodePrepare(); }

extern "C" int hone_kb_num_configs(int family) {
  switch (family) {
    case kHoneKbRmsnormFp8: return hone_kb::RmsnormNumConfigs();
    case kHoneKbRopeKvCache: return hone_kb::RopeNumConfigs();
    case kHoneKbPagedDecode: return hone_kb::DecodeNumConfigs();
    default: return 0;
  }
}

extern "C" const char* hone_kb_config_name(int family, int index) {
  hone_kb::ConfigInfo c{};
  return hone_kb::Lookup(family, index, &c) ? c.name : nullptr;
}

extern "C" int hone_kb_config_attrs(int family, int index, int* regs, int* local_bytes, int* static_smem,
                                    int* dynamic_smem, int* max_threads) {
  hone_kb::ConfigInfo c{};
  if (!hone_kb::Lookup(family, index, &c)) return HONE_KB_INVALID_CONFIG;
  return hone_kb::FillAttrs(c, regs, local_bytes, static_smem, dynamic_smem, max_threads);
}

extern "C" int hone_kb_copy(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes % 16 != 0) return HONE_KB_INVALID_CONFIG;
  hone_kb::CopyKernel<<<hone_kb::ProbeBlocks(), hone_kb::kProbeThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / 16);
  return hone_kb::LaunchStatus();
}

extern "C" int hone_kb_read(const void* src, size_t bytes, float* sink, int sink_len, void* stream) {
  if (bytes % 16 != 0 || sink_len <= 0) return HONE_KB_INVALID_CONFIG;
  hone_kb::ReadKernel<<<hone_kb::ProbeBlocks(), hone_kb::kProbeThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(src), bytes / 16, sink, sink_len);
  return hone_kb::LaunchStatus();
}
