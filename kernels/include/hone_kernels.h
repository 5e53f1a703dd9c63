// hone_kernels.h: the C ABI of hone's tuned CUDA kernel families.
//
// The kernels live in libhone_kernels.so (built by kernels/build.sh on the device, and
// compiled by CMake's CUDA check on CPU CI). A caller (the device driver
// kernels/bench/kbench.py, through ctypes) enumerates each family's parameter space,
// reads the compiler's resource use of each instantiation and launches one config on a
// stream it owns. Every launch function validates the config against the shape first and
// returns HONE_KB_INVALID_CONFIG without launching when it does not fit; otherwise it
// returns the cudaError_t of the launch (0 on success). No function allocates, syncs the
// host or touches a stream other than the one passed, so every launch is graph-capturable.
// Pointers are device pointers; all tensors are contiguous in the layouts documented at
// each function. Thread-safety: functions are reentrant; launches race only on the
// buffers the caller passes.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HONE_KB_ABI_VERSION 1
#define HONE_KB_INVALID_CONFIG (-1)

enum HoneKbFamily {
  kHoneKbRmsnormFp8 = 0,     // fused residual add + RMSNorm + FP8 (e4m3) quantization
  kHoneKbRopeKvCache = 1,    // neox RoPE on q/k fused with the paged KV-cache write
  kHoneKbPagedDecode = 2,    // paged GQA decode attention (split-KV)
  kHoneKbNumFamilies = 3,
};

int hone_kb_abi_version(void);
// Sets per-kernel attributes (dynamic shared-memory limits). Call once per process before
// the first launch or capture; returns a cudaError_t.
int hone_kb_prepare(void);
int hone_kb_num_configs(int family);
// "threads=256,vpt=2" style description of config `index` (static storage).
const char* hone_kb_config_name(int family, int index);
// Compiler resource use of the config's main kernel (cudaFuncGetAttributes):
// registers per thread, local memory bytes per thread (stack + spills), static shared
// bytes, dynamic shared bytes the launch asks for (0 when shape-dependent), max threads.
int hone_kb_config_attrs(int family, int index, int* regs, int* local_bytes, int* static_smem,
                         int* dynamic_smem, int* max_threads);

// y = RMSNorm(x + residual) * weight, quantized to FP8 e4m3 (saturating, RNE).
//   x, residual, residual_out: [tokens, hidden] bf16; weight: [hidden] bf16;
//   out: [tokens, hidden] fp8 e4m3 (1 byte each);
//   quant_mode 0 (static): scale[0] is the input per-tensor scale, q = y / scale;
//   quant_mode 1 (per token): scale[t] = max|y_t| / 448 (>= 1e-12) is written.
//   residual_out = bf16(x + residual); the norm is taken over residual_out.
int hone_kb_rmsnorm_fp8(int config, const void* x, const void* residual, const void* weight,
                        void* residual_out, void* out, float* scale, int quant_mode, int tokens,
                        int hidden, float eps, void* stream);

// Neox-style rotary embedding of q and k, fused with the KV-cache write.
//   positions, slot_mapping: [tokens] int64 (slot < 0: token is padding, no cache write);
//   q: [tokens, num_q_heads, head_dim]; k, v: [tokens, num_kv_heads, head_dim] bf16;
//   cos_sin: [max_position, head_dim] bf16 (cos in the first half, sin in the second);
//   q_out: [tokens, num_q_heads, head_dim] bf16 (rotated q);
//   k_cache, v_cache: [num_blocks, block_size, num_kv_heads, head_dim] bf16 (vLLM's flash
//   layout; slot s is row s of the flattened [num_blocks * block_size] axis).
int hone_kb_rope_kvcache(int config, const int64_t* positions, const void* q, const void* k,
                         const void* v, const void* cos_sin, const int64_t* slot_mapping,
                         void* q_out, void* k_cache, void* v_cache, int tokens, int num_q_heads,
                         int num_kv_heads, int head_dim, void* stream);

// Paged GQA decode attention, one query token per sequence.
//   q: [batch, num_q_heads, head_dim] bf16; out: [batch, num_q_heads, head_dim] bf16;
//   k_cache, v_cache: [num_blocks, page_size, num_kv_heads, head_dim] bf16;
//   block_tables: [batch, max_blocks_per_seq] int32; seq_lens: [batch] int32;
//   num_splits >= 1 splits each sequence's keys across CTAs (flash-decoding); when > 1,
//   workspace (hone_kb_paged_decode_workspace_bytes) holds the partial results.
int hone_kb_paged_decode(int config, int num_splits, const void* q, const void* k_cache,
                         const void* v_cache, const int32_t* block_tables, const int32_t* seq_lens,
                         void* out, void* workspace, int batch, int num_q_heads, int num_kv_heads,
                         int head_dim, int page_size, int max_blocks_per_seq, float scale,
                         void* stream);
size_t hone_kb_paged_decode_workspace_bytes(int batch, int num_q_heads, int head_dim,
                                            int num_splits);

// Ceiling probes: a streaming copy (16-byte accesses) and a streaming read (sum into
// one float per block, written to sink[blockIdx]); bytes must be a multiple of 16.
int hone_kb_copy(void* dst, const void* src, size_t bytes, void* stream);
int hone_kb_read(const void* src, size_t bytes, float* sink, int sink_len, void* stream);

#ifdef __cplusplus
}
#endif
