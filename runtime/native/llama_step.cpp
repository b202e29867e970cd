// The decoder layers of a Llama-family model for up to 64 rows, as one call (float32, CPU).
//
// What the compact forward (cache/compact_llama.py) runs as about 200 small torch ops a
// step, each with its dispatch, this runs as plain loops: RMSNorm, the q / k / v
// projections, rotary embeddings, the new keys and values written into the document's
// preallocated buffers, grouped-query attention over the cache (causal, or under an
// additive mask), the output projection, the SiLU-gated MLP, the residual adds, and the
// final norm of the kept rows. The q / k / v projections may carry biases (Qwen2), added to
// the finished sums as the compact forward adds them. The output layer (project_packed)
// runs on the same kernel.
//
// A projection's weights are a copy of the model's [in, out] ones (cpu_layout.py's
// InputMajorLinear.weight_t) cut into panels of 16 columns, each one contiguous run
// (pack_panels, once at load), float32 or, where every weight is a float16 value, float16
// (half the bytes to stream; each converts to the same float32, so the same sums), else
// bfloat16 where every weight is a bfloat16 value (a bfloat16 checkpoint: half the bytes,
// widened by a shift, the same sums again), or int8
// with a float32 scale per column (pack_int8_panels: a quarter of the bytes; the column's
// sums of x * int8 are scaled once at the end; on a CPU with AVX-512 VNNI the rows are
// quantized too and multiplied as int8, project_vnni). A projection takes each panel's rows eight at a time, its
// 8 x 16 sums in registers over the whole input (five to seven rows padded to eight);
// the panels split over torch's intra-op threads (at::parallel_for), and a sum's order
// never depends on the thread count. Attention reads the cached keys once a row for a
// few rows (attend), and as two batched GEMMs a layer for many (attend_many, from
// native_llama.py's ATTEND_MANY_ROWS). Sums run in a different order than MKL's: logits
// agree with the reference forward to float rounding (tests: within 1e-4), not bit for
// bit.
#include <torch/extension.h>
#include <ATen/Parallel.h>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr int64_t PARALLEL_MIN_MACS = 1 << 17;   // below this a projection runs on one thread
constexpr int64_t LANES = 8;

void check(const torch::Tensor& t, const char* what);
void check_panels(const torch::Tensor& t, const char* what);

// p[j] = exp(p[j]) for j < n, in straight-line float arithmetic the compiler vectorizes
// (Cephes' expf: a degree-5 polynomial on the reduced argument, within 2 ulp of std::exp
// over the range used here); inputs below -87.3 give 0.
void exp_inplace(float* p, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float v = p[j];
    float x = v < -87.3f ? -87.3f : v;
    x = x > 88.3f ? 88.3f : x;
    const float k = std::floor(x * 1.44269504088896341f + 0.5f);
    float r = x - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
    const float scale = __builtin_bit_cast(float, bits);
    p[j] = v < -87.3f ? 0.0f : y * scale;
  }
}

// eight floats as one vector (GCC / Clang vector extensions: AVX, AVX-512 or NEON code)
typedef float v8 __attribute__((vector_size(32)));

inline v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store8(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }

inline float hsum(v8 a) {
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

// sum_i a[i] * b[i] for i < d (d a multiple of LANES: the head sizes of these models)
inline float dot(const float* a, const float* b, int64_t d) {
  v8 acc = load8(a) * load8(b);
  for (int64_t i = LANES; i < d; i += LANES) acc += load8(a + i) * load8(b + i);
  return hsum(acc);
}

// A projection's weights as panels: w [in, out] cut into strips of TILE columns,
// [ceil(out / TILE), in, TILE] (zero past `out`), so a strip streams as one contiguous
// run (made once, when the model is loaded: cache/native_llama.py).
constexpr int64_t TILE = 16;    // two vectors of eight floats

torch::Tensor pack_panels(torch::Tensor w, const std::string& storage) {
  check(w, "w");
  TORCH_CHECK(storage == "float32" || storage == "float16" || storage == "bfloat16",
              "storage: float32, float16 or bfloat16, not ", storage);
  TORCH_CHECK(w.dim() == 2, "w: [in, out] needed");
  const int64_t in = w.size(0), out = w.size(1), strips = (out + TILE - 1) / TILE;
  auto panels = torch::zeros({strips, in, TILE}, w.options());
  const float* src = w.data_ptr<float>();
  float* dst = panels.data_ptr<float>();
  for (int64_t p = 0; p < strips; ++p) {
    const int64_t width = std::min(TILE, out - p * TILE);
    for (int64_t i = 0; i < in; ++i)
      std::copy_n(src + i * out + p * TILE, width, dst + (p * in + i) * TILE);
  }
  if (storage == "float32") return panels;
  auto halves = panels.to(storage == "float16" ? torch::kHalf : torch::kBFloat16);
  TORCH_CHECK(torch::equal(halves.to(torch::kFloat32), panels),
              "w: not every weight is a ", storage, " value (its panels must stay float32)");
  return halves;
}

// int8 panels: w's int8 values [in, out] as [ceil(out / TILE), in + SCALE_ROWS, TILE], each
// strip's TILE column scales (float32, zero past `out`) as the bytes of its last
// SCALE_ROWS rows; weight[i][c] = int8[i][c] * scale[c] (cache/int8_weights.py).
constexpr int64_t SCALE_ROWS = sizeof(float);   // TILE float32 scales: 4 rows of TILE bytes

torch::Tensor pack_int8_panels(torch::Tensor q, torch::Tensor scale) {
  TORCH_CHECK(q.device().is_cpu() && q.scalar_type() == torch::kChar && q.is_contiguous() &&
              q.dim() == 2, "q: a contiguous int8 CPU tensor [in, out] is needed");
  check(scale, "scale");
  const int64_t in = q.size(0), out = q.size(1), strips = (out + TILE - 1) / TILE;
  TORCH_CHECK(scale.dim() == 1 && scale.size(0) == out, "scale: [out] needed");
  auto panels = torch::zeros({strips, in + SCALE_ROWS, TILE}, q.options());
  const int8_t* src = q.data_ptr<int8_t>();
  const float* sc = scale.data_ptr<float>();
  int8_t* dst = panels.data_ptr<int8_t>();
  for (int64_t p = 0; p < strips; ++p) {
    const int64_t width = std::min(TILE, out - p * TILE);
    int8_t* panel = dst + p * (in + SCALE_ROWS) * TILE;
    for (int64_t i = 0; i < in; ++i)
      std::copy_n(src + i * out + p * TILE, width, panel + i * TILE);
    std::memcpy(panel + in * TILE, sc + p * TILE, width * sizeof(float));
  }
  return panels;
}

// the rows of input a panel holds (int8 panels carry their scales in SCALE_ROWS more)
int64_t panel_in(const torch::Tensor& panels) {
  return panels.size(1) - (panels.scalar_type() == torch::kChar ? SCALE_ROWS : 0);
}

// Whether float16 panels are read with the CPU's conversion instructions (F16C); without
// them they are read one weight at a time (correct, slower: the loader then keeps
// float32 panels).
bool fast_half() {
#if defined(__F16C__)
  return true;
#else
  return false;
#endif
}

// Whether bfloat16 panels are widened eight at a time (AVX2); without it one at a time.
bool fast_bfloat16() {
#if defined(__AVX2__)
  return true;
#else
  return false;
#endif
}

// the 16 weights of one panel row as two vectors of eight, from float32 panels or from
// float16 ones (each float16 value converts to float32 exactly: the same products)
inline void load16(const float* p, v8& lo, v8& hi) {
  lo = load8(p);
  hi = load8(p + 8);
}

// (inlined by force: where GCC kept these calls, the float16 loop of two to eight rows ran
// two to three times slower than the float32 one)
#define INKLING_INLINE __attribute__((always_inline)) inline

INKLING_INLINE void load16(const at::Half* p, v8& lo, v8& hi) {
#if defined(__F16C__)
  const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  std::memcpy(&lo, &a, sizeof lo);
  std::memcpy(&hi, &b, sizeof hi);
#else
  for (int j = 0; j < 8; ++j) {
    lo[j] = static_cast<float>(p[j]);
    hi[j] = static_cast<float>(p[j + 8]);
  }
#endif
}

// 16 bfloat16 weights as two vectors of eight floats: each one's bits are a float32's top
// half, so a shift widens it exactly (the float32 panels' products)
INKLING_INLINE void load16(const at::BFloat16* p, v8& lo, v8& hi) {
#if defined(__AVX2__)
  const __m128i* q = reinterpret_cast<const __m128i*>(p);
  const __m256i a = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(q)), 16);
  const __m256i b = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(q + 1)), 16);
  std::memcpy(&lo, &a, sizeof lo);
  std::memcpy(&hi, &b, sizeof hi);
#else
  for (int j = 0; j < 8; ++j) {
    lo[j] = __builtin_bit_cast(float, static_cast<uint32_t>(p[j].x) << 16);
    hi[j] = __builtin_bit_cast(float, static_cast<uint32_t>(p[j + 8].x) << 16);
  }
#endif
}

// 16 int8 weights as two vectors of eight floats (exact: small integers); their column
// scales are applied to the finished sums (scale16)
INKLING_INLINE void load16(const int8_t* p, v8& lo, v8& hi) {
#if defined(__AVX2__)
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  const __m256 c = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(b, b)));
  std::memcpy(&lo, &a, sizeof lo);
  std::memcpy(&hi, &c, sizeof hi);
#else
  for (int j = 0; j < 8; ++j) {
    lo[j] = static_cast<float>(p[j]);
    hi[j] = static_cast<float>(p[j + 8]);
  }
#endif
}

// a panel's 16 finished column sums times its column scales: int8 panels only (the
// others hold the weights themselves)
INKLING_INLINE void scale16(const float*, int64_t, v8&, v8&) {}
INKLING_INLINE void scale16(const at::Half*, int64_t, v8&, v8&) {}
INKLING_INLINE void scale16(const at::BFloat16*, int64_t, v8&, v8&) {}
INKLING_INLINE void scale16(const int8_t* wp, int64_t in, v8& a0, v8& a1) {
  float s[TILE];
  std::memcpy(s, wp + in * TILE, sizeof s);
  a0 *= load8(s);
  a1 *= load8(s + 8);
}

// y [R, c0 .. c0 + TILE) of rows x [R, in] times one panel wp [in, TILE]: the R x 16
// sums stay in registers over the whole of `in`. Each is split in S partial sums over
// i mod S (few rows have too few independent sums to keep the FMA units busy), added in
// a fixed order at the end: a result never depends on the thread count. W: the panels'
// storage, float or at::Half (the same sums: a float16 weight is a float32 value).
template <int R, int S, typename W>
INKLING_INLINE void panel_rows(const float* x, int64_t in, const W* wp, float* y, int64_t out,
                               int64_t c0) {
  v8 acc[S][R][2];
  for (int s = 0; s < S; ++s)
    for (int r = 0; r < R; ++r) acc[s][r][0] = acc[s][r][1] = v8{};
  int64_t i = 0;
  for (; i + S <= in; i += S)
    for (int s = 0; s < S; ++s) {
      v8 w0, w1;
      load16(wp + (i + s) * TILE, w0, w1);
      for (int r = 0; r < R; ++r) {
        const float a = x[r * in + i + s];
        acc[s][r][0] += a * w0;
        acc[s][r][1] += a * w1;
      }
    }
  for (; i < in; ++i) {
    v8 w0, w1;
    load16(wp + i * TILE, w0, w1);
    for (int r = 0; r < R; ++r) {
      const float a = x[r * in + i];
      acc[0][r][0] += a * w0;
      acc[0][r][1] += a * w1;
    }
  }
  const int64_t width = std::min(TILE, out - c0);
  for (int r = 0; r < R; ++r) {
    v8 a0 = acc[0][r][0], a1 = acc[0][r][1];
    for (int s = 1; s < S; ++s) {
      a0 += acc[s][r][0];
      a1 += acc[s][r][1];
    }
    scale16(wp, in, a0, a1);
    float row[TILE];
    store8(row, a0);
    store8(row + 8, a1);
    std::copy_n(row, width, y + r * out + c0);
  }
}

// one panel's columns [c0, c0 + TILE) of y for all rows: `full` rows eight at a time, then
// the `rest` (five to seven as eight: xpad / ypad)
template <typename W>
inline void panel_blocks(const float* x, int64_t full, int64_t rest, int64_t in, const W* wp,
                         float* y, int64_t out, int64_t c0, const std::vector<float>& xpad,
                         std::vector<float>& ypad) {
  for (int64_t r = 0; r < full; r += 8)
    panel_rows<8, 1>(x + r * in, in, wp, y + r * out, out, c0);
  const float* xr = x + full * in;
  float* yr = y + full * out;
  switch (rest) {
    case 4: panel_rows<4, 1>(xr, in, wp, yr, out, c0); break;
    case 3: panel_rows<3, 2>(xr, in, wp, yr, out, c0); break;
    case 2: panel_rows<2, 2>(xr, in, wp, yr, out, c0); break;
    case 1: panel_rows<1, 4>(xr, in, wp, yr, out, c0); break;
    case 0: break;
    default: panel_rows<8, 1>(xpad.data(), in, wp, ypad.data(), out, c0); break;
  }
}

// y [n, out] = x [n, in] @ w [in, out], w as panels [ceil(out / TILE), in, TILE]; the
// panels split over torch's intra-op threads (at::parallel_for). Rows go eight at a
// time (16 sums in registers: fewer loads per product than four); five to seven rows
// left over go as eight, padded with zero rows (one pass, where four, two and one made
// three passes slower than one of eight); one to four left over as they are.
template <typename W>
void project_as(const float* x, int64_t n, int64_t in, const W* panels, int64_t out,
                float* y, int64_t stride) {
  const int64_t strips = (out + TILE - 1) / TILE;
  const int64_t threads = in * out * n < PARALLEL_MIN_MACS ? 1 : at::get_num_threads();
  const int64_t grain = std::max<int64_t>(1, (strips + threads - 1) / threads);
  const int64_t full = n / 8 * 8, rest = n - full;
  std::vector<float> xpad, ypad;                         // [8, in], [8, out] when rest > 4
  if (rest > 4) {
    xpad.assign(8 * in, 0.0f);
    std::copy_n(x + full * in, rest * in, xpad.data());
    ypad.resize(8 * out);
  }
  at::parallel_for(0, strips, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      panel_blocks(x, full, rest, in, panels + p * stride, y, out, p * TILE, xpad, ypad);
  });
  if (rest > 4) std::copy_n(ypad.data(), rest * out, y + full * out);
}

// int8 panels times int8 rows, where the CPU has AVX-512 VNNI and VBMI (checked as it
// runs; the functions are compiled for them alone): each row quantized in blocks of
// QBLOCK inputs over its largest magnitude (as llama.cpp's Q8_0 quantizes activations),
// stored as q + 128; a panel's four input rows of 16 columns turned by one byte permute
// into 16 lanes of four bytes, so that one vpdpbusd adds 64 products. The offset's share,
// 128 times the block's column sums (vpdpbusd of ones, shared by every row), is taken off
// each block's integer sums before they are scaled and added in float: a row's result is
// the same for any row count and thread count.
constexpr int64_t QBLOCK = 32;
#define INKLING_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

bool vnni_supported() {
  static const bool ok = __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vnni") &&
                         __builtin_cpu_supports("avx512vbmi");
  return ok;
}

bool vnni_on = true;              // use_vnni(False): the float products (tests, benchmarks)

bool use_vnni(bool on) {
  vnni_on = on;
  return vnni_on && vnni_supported();
}

// x [n, in] -> xq [n, in] (q + 128), sx [n, in / QBLOCK]: each block over its amax / 127
void quantize_blocks(const float* x, int64_t n, int64_t in, uint8_t* xq, float* sx) {
  const int64_t blocks = in / QBLOCK;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + r * in + b * QBLOCK;
      float amax = 0.0f;
      for (int64_t k = 0; k < QBLOCK; ++k) amax = std::max(amax, std::fabs(xb[k]));
      const float scale = amax / 127.0f;
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      uint8_t* qb = xq + r * in + b * QBLOCK;
      for (int64_t k = 0; k < QBLOCK; ++k) {
        const float q = std::nearbyint(std::min(127.0f, std::max(-127.0f, xb[k] * inv)));
        qb[k] = static_cast<uint8_t>(static_cast<int>(q) + 128);
      }
      sx[r * blocks + b] = scale;
    }
}

// y [R, c0 .. c0 + TILE) of quantized rows times one int8 panel wp [in + SCALE_ROWS, TILE]
template <int R>
INKLING_VNNI inline void vnni_rows(const uint8_t* xq, const float* sx, int64_t in,
                                   const int8_t* wp, float* y, int64_t out, int64_t c0) {
  alignas(64) static const int8_t order[64] = {      // lane c, byte k <- input row k, column c
      0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51,
      4, 20, 36, 52, 5, 21, 37, 53, 6, 22, 38, 54, 7, 23, 39, 55,
      8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
      12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
  const __m512i turn = _mm512_load_si512(order);
  const __m512i ones = _mm512_set1_epi8(1);
  const int64_t blocks = in / QBLOCK;
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i sums[R];
    __m512i columns = _mm512_setzero_si512();
    for (int r = 0; r < R; ++r) sums[r] = _mm512_setzero_si512();
    for (int64_t i = b * QBLOCK; i < (b + 1) * QBLOCK; i += 4) {
      const __m512i w = _mm512_permutexvar_epi8(turn, _mm512_loadu_si512(wp + i * TILE));
      columns = _mm512_dpbusd_epi32(columns, ones, w);
      for (int r = 0; r < R; ++r) {
        int32_t four;
        std::memcpy(&four, xq + r * in + i, sizeof four);
        sums[r] = _mm512_dpbusd_epi32(sums[r], _mm512_set1_epi32(four), w);
      }
    }
    const __m512i offset = _mm512_slli_epi32(columns, 7);                 // 128 * sums of w
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums[r], offset)),
                               _mm512_set1_ps(sx[r * blocks + b]), acc[r]);
  }
  const __m512 scale = _mm512_loadu_ps(reinterpret_cast<const float*>(wp + in * TILE));
  const __mmask16 keep = static_cast<__mmask16>((1u << std::min(TILE, out - c0)) - 1);
  for (int r = 0; r < R; ++r)
    _mm512_mask_storeu_ps(y + r * out + c0, keep, _mm512_mul_ps(acc[r], scale));
}

template <int R>
INKLING_VNNI void vnni_strip(const uint8_t* xq, const float* sx, int64_t in, const int8_t* wp,
                             float* y, int64_t out, int64_t c0) {
  vnni_rows<R>(xq, sx, in, wp, y, out, c0);
}

// y [n, out] = x [n, in] @ int8 panels, by vnni_rows: rows eight at a time, then the rest
INKLING_VNNI void project_vnni(const float* x, int64_t n, int64_t in, const int8_t* panels,
                               int64_t out, float* y, int64_t stride) {
  const int64_t blocks = in / QBLOCK, strips = (out + TILE - 1) / TILE;
  std::vector<uint8_t> xq(n * in);
  std::vector<float> sx(n * blocks);
  quantize_blocks(x, n, in, xq.data(), sx.data());
  const int64_t threads = in * out * n < PARALLEL_MIN_MACS ? 1 : at::get_num_threads();
  const int64_t grain = std::max<int64_t>(1, (strips + threads - 1) / threads);
  using Strip = void (*)(const uint8_t*, const float*, int64_t, const int8_t*, float*, int64_t,
                         int64_t);
  static constexpr Strip by_rows[8] = {vnni_strip<1>, vnni_strip<2>, vnni_strip<3>,
                                       vnni_strip<4>, vnni_strip<5>, vnni_strip<6>,
                                       vnni_strip<7>, vnni_strip<8>};
  at::parallel_for(0, strips, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t r = 0; r < n; r += 8) {
        const int64_t rows = std::min<int64_t>(8, n - r);
        by_rows[rows - 1](xq.data() + r * in, sx.data() + r * blocks, in,
                          panels + p * stride, y + r * out, out, p * TILE);
      }
  });
}

// project_as for panels of any storage (pack_panels': float32, or float16 / bfloat16 when
// every weight is such a value: half the bytes a product reads, the same sums; or
// pack_int8_panels': int8 with column scales, a quarter of the bytes)
void project(const float* x, int64_t n, int64_t in, const torch::Tensor& panels, int64_t out,
             float* y) {
  TORCH_CHECK(panel_in(panels) == in, "panels of ", panel_in(panels), " rows for an input of ", in);
  const int64_t stride = panels.size(1) * TILE;          // elements a strip
  if (panels.scalar_type() == torch::kHalf)
    project_as(x, n, in, panels.data_ptr<at::Half>(), out, y, stride);
  else if (panels.scalar_type() == torch::kBFloat16)
    project_as(x, n, in, panels.data_ptr<at::BFloat16>(), out, y, stride);
  else if (panels.scalar_type() == torch::kChar && in % QBLOCK == 0 && vnni_on &&
           vnni_supported())
    project_vnni(x, n, in, panels.data_ptr<int8_t>(), out, y, stride);
  else if (panels.scalar_type() == torch::kChar)
    project_as(x, n, in, panels.data_ptr<int8_t>(), out, y, stride);
  else
    project_as(x, n, in, panels.data_ptr<float>(), out, y, stride);
}

// out [n, dim] = x * rsqrt(mean(x^2) + eps) * weight   (float32 inside, as transformers)
void rms_norm(const float* x, int64_t n, int64_t dim, const float* weight, float eps,
              float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * dim;
    float ss = 0.0f;
    for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    float* o = out + r * dim;
    for (int64_t i = 0; i < dim; ++i) o[i] = weight[i] * (xr[i] * scale);
  }
}

// x [n, heads, d] rotated in place: x * cos + roll(x, d / 2) * sin'  (sin' = sin with its
// first half negated; cos, sin' [n, d])
void rotate(float* x, int64_t n, int64_t heads, int64_t d, const float* cos,
            const float* sin) {
  const int64_t half = d / 2;
  std::vector<float> tmp(d);
  for (int64_t r = 0; r < n; ++r) {
    const float* c = cos + r * d;
    const float* s = sin + r * d;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * d;
      for (int64_t j = 0; j < d; ++j) tmp[j] = v[j];
      for (int64_t j = 0; j < d; ++j) {
        const int64_t k = j < half ? j + half : j - half;
        v[j] = tmp[j] * c[j] + tmp[k] * s[j];
      }
    }
  }
}

// [x0 + x1 of each adjacent pair of lanes of a, then of b]: pair sums of two vectors
inline v8 pair_sums(v8 a, v8 b) {
  return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14) +
         __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
}

// [sum of the lanes of s[k] for k < 8]: eight horizontal sums at the cost of seven pair
// sums (a transpose as it adds)
inline v8 sums8(const v8* s) {
  const v8 a = pair_sums(pair_sums(s[0], s[1]), pair_sums(s[2], s[3]));
  const v8 b = pair_sums(pair_sums(s[4], s[5]), pair_sums(s[6], s[7]));
  return pair_sums(a, b);
}

// p[j] = q . k_j * scale (+ m[j]) for j < seen; q [d], keys [seen, d] (d a multiple of
// LANES). Eight keys at a time: eight sums of products, then their eight totals at once.
void scores(const float* q, const float* keys, int64_t seen, int64_t d, float scale,
            const float* m, float* p) {
  int64_t j = 0;
  for (; j + 8 <= seen; j += 8) {
    v8 s[8] = {};
    const float* k = keys + j * d;
    for (int64_t i = 0; i < d; i += LANES) {
      const v8 qi = load8(q + i);
      for (int t = 0; t < 8; ++t) s[t] += qi * load8(k + t * d + i);
    }
    v8 out = sums8(s) * scale;
    if (m != nullptr) out += load8(m + j);
    store8(p + j, out);
  }
  for (; j < seen; ++j) p[j] = dot(q, keys + j * d, d) * scale + (m ? m[j] : 0.0f);
}

// max over p[j < n]
inline float top(const float* p, int64_t n) {
  float best = -std::numeric_limits<float>::infinity();
  int64_t j = 0;
  if (n >= LANES) {
    v8 acc = load8(p);
    for (j = LANES; j + LANES <= n; j += LANES) {
      const v8 x = load8(p + j);
      acc = acc > x ? acc : x;
    }
    for (int t = 0; t < LANES; ++t) best = std::max(best, acc[t]);
  }
  for (; j < n; ++j) best = std::max(best, p[j]);
  return best;
}

// sum of p[j < n], eight running sums then their total (a fixed order)
inline float total(const float* p, int64_t n) {
  v8 acc = {};
  int64_t j = 0;
  for (; j + LANES <= n; j += LANES) acc += load8(p + j);
  float sum = hsum(acc);
  for (; j < n; ++j) sum += p[j];
  return sum;
}

// out [n, heads, d]: each query row's attention over the first `past + n` cached entries
// of keys / values [kv_heads, cap, d]; row r sees entries 0 .. past + r (mask == nullptr)
// or every entry, plus mask [n, past + n] (additive). The `groups` query heads that share
// a key / value head are done together, so each value is read once a row (and each key
// from the first-level cache after the first head).
void attend(const float* q, int64_t n, int64_t heads, int64_t kv_heads, int64_t d,
            const float* keys, const float* values, int64_t cap, int64_t past,
            const float* mask, float scale, float* out) {
  const int64_t groups = heads / kv_heads;
  const int64_t total_len = past + n;
  at::parallel_for(0, n * kv_heads, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> p(groups * total_len);             // [groups, total] weights
    std::vector<float> acc(groups * d);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / kv_heads, g = t % kv_heads;
      const float* qg = q + (r * heads + g * groups) * d;  // [groups, d]
      const float* kg = keys + g * cap * d;
      const float* vg = values + g * cap * d;
      const int64_t seen = mask == nullptr ? past + r + 1 : total_len;
      const float* m = mask == nullptr ? nullptr : mask + r * total_len;
      for (int64_t h = 0; h < groups; ++h) {
        float* ph = p.data() + h * total_len;
        scores(qg + h * d, kg, seen, d, scale, m, ph);
        const float high = top(ph, seen);
        for (int64_t j = 0; j < seen; ++j) ph[j] -= high;
        exp_inplace(ph, seen);
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < seen; ++j) {
        const float* vj = vg + j * d;
        for (int64_t h = 0; h < groups; ++h) {
          const float w = p[h * total_len + j];
          float* ah = acc.data() + h * d;
          for (int64_t i = 0; i < d; i += LANES) store8(ah + i, load8(ah + i) + w * load8(vj + i));
        }
      }
      for (int64_t h = 0; h < groups; ++h) {
        const float inv = 1.0f / total(p.data() + h * total_len, seen);
        float* o = out + (r * heads + g * groups + h) * d;
        for (int64_t i = 0; i < d; ++i) o[i] = acc[h * d + i] * inv;
      }
    }
  });
}

// attend's result for many rows, by two batched matrix products (torch's GEMM): the
// scores of all n * groups queries of a key / value head against its entries, their
// softmax here (the causal cut or the mask, max, exp, sum), then the weighted values.
// Each key and value is read once for all rows, where attend reads them once a row.
void attend_many(const float* q, int64_t n, int64_t heads, int64_t kv_heads, int64_t d,
                 const torch::Tensor& keys, const torch::Tensor& values, int64_t past,
                 const float* mask, float scale, float* out) {
  const int64_t groups = heads / kv_heads, total_len = past + n, rows = n * groups;
  auto qg = torch::empty({kv_heads, rows, d}, keys.options());       // [kv, n * groups, d]
  float* qp = qg.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < kv_heads; ++g)
      for (int64_t h = 0; h < groups; ++h) {
        const float* src = q + (r * heads + g * groups + h) * d;
        float* dst = qp + (g * rows + r * groups + h) * d;
        for (int64_t i = 0; i < d; ++i) dst[i] = src[i] * scale;
      }
  auto k = keys.narrow(1, 0, total_len);                           // [kv, total, d]
  auto v = values.narrow(1, 0, total_len);
  auto s = at::bmm(qg, k.transpose(1, 2));                         // [kv, rows, total]
  float* sp = s.data_ptr<float>();
  at::parallel_for(0, kv_heads * rows, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = (t % rows) / groups;
      float* p = sp + t * total_len;
      const int64_t seen = mask == nullptr ? past + r + 1 : total_len;
      if (mask != nullptr) {
        const float* m = mask + r * total_len;
        for (int64_t j = 0; j < total_len; ++j) p[j] += m[j];
      }
      const float high = top(p, seen);
      for (int64_t j = 0; j < seen; ++j) p[j] -= high;
      exp_inplace(p, seen);
      const float inv = 1.0f / total(p, seen);
      for (int64_t j = 0; j < seen; ++j) p[j] *= inv;
      std::fill(p + seen, p + total_len, 0.0f);
    }
  });
  auto o = at::bmm(s, v);                                          // [kv, rows, d]
  const float* op = o.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < kv_heads; ++g)
      for (int64_t h = 0; h < groups; ++h)
        std::copy_n(op + (g * rows + r * groups + h) * d, d,
                    out + (r * heads + g * groups + h) * d);
}

void check(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
              what, ": a contiguous float32 CPU tensor is needed");
}

void check_panels(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.dim() == 3 && t.size(2) == TILE &&
              (t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kHalf ||
               t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kChar),
              what, ": contiguous CPU panels [strips, in, ", TILE, "] of float32, float16, "
              "bfloat16 or int8 (with its scales) are needed");
}

// y [n, out] += bias [out] on each row (after the product, as torch's mm + bias)
void add_bias(float* y, int64_t n, int64_t out, const torch::Tensor& bias) {
  if (bias.numel() == 0) return;
  const float* b = bias.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < out; ++c) y[r * out + c] += b[c];
}

}  // namespace

// x [n, hidden] (the embeddings; updated in place to the residual stream);
// layer_weights: per layer in_norm [hidden], q [hidden, H*d], k [hidden, kv*d],
// v [hidden, kv*d], o [H*d, hidden], post_norm [hidden], gate [hidden, I], up [hidden, I],
// down [I, hidden] (9 tensors a layer; the projections as pack_panels' panels); biases:
// empty, or per layer q [H*d], k [kv*d], v [kv*d] (each empty where that projection has
// none); keys / values [layers, 1, kv, cap, d] with the
// cache's first `past` entries (the new rows' are written at past .. past + n);
// cos / sin [n, d] (sin with its first half negated); mask: empty, or [n, past + n]
// additive; many_rows: from this many rows attention runs as attend_many. Returns the
// final norm of the last `keep` rows (all when keep == 0): [keep or n, hidden].
torch::Tensor layers_forward(torch::Tensor x, std::vector<torch::Tensor> layer_weights,
                             std::vector<torch::Tensor> biases, torch::Tensor keys,
                             torch::Tensor values, int64_t past,
                             torch::Tensor cos, torch::Tensor sin, torch::Tensor mask,
                             torch::Tensor final_norm, double eps, double scale,
                             int64_t heads, int64_t kv_heads, int64_t keep, int64_t many_rows) {
  check(x, "x");
  check(keys, "keys");
  check(values, "values");
  check(cos, "cos");
  check(sin, "sin");
  check(final_norm, "final_norm");
  TORCH_CHECK(layer_weights.size() % 9 == 0, "layer_weights: 9 tensors a layer");
  for (size_t i = 0; i < layer_weights.size(); ++i) {
    const bool norm = i % 9 == 0 || i % 9 == 5;       // the norms' weights: float32
    if (norm) check(layer_weights[i], "a norm weight");
    else check_panels(layer_weights[i], "a projection's panels");
  }
  const int64_t n = x.size(0), hidden = x.size(1);
  const int64_t layers = static_cast<int64_t>(layer_weights.size() / 9);
  TORCH_CHECK(biases.empty() || static_cast<int64_t>(biases.size()) == 3 * layers,
              "biases: none, or q / k / v a layer");
  const int64_t cap = keys.size(3), d = keys.size(4);
  TORCH_CHECK(keys.size(0) == layers && keys.size(2) == kv_heads, "keys: wrong shape");
  TORCH_CHECK(past + n <= cap, "keys: no room for ", n, " rows after ", past);
  TORCH_CHECK(cos.size(0) == n && cos.size(1) == d, "cos: [n, head_dim] needed");
  const float* m = nullptr;
  if (mask.numel() > 0) {
    check(mask, "mask");
    TORCH_CHECK(mask.size(0) == n && mask.size(1) == past + n, "mask: [n, past + n] needed");
    m = mask.data_ptr<float>();
  }
  TORCH_CHECK(d % LANES == 0, "head_dim ", d, " is not a multiple of ", LANES);
  const int64_t qdim = heads * d, kvdim = kv_heads * d;
  for (size_t i = 0; i < biases.size(); ++i) {
    if (biases[i].numel() == 0) continue;
    check(biases[i], "a bias");
    TORCH_CHECK(biases[i].numel() == (i % 3 == 0 ? qdim : kvdim), "a bias: wrong size");
  }
  const int64_t inter = panel_in(layer_weights[8]);   // down's panels [strips, inter, TILE]
  auto opts = x.options();
  auto h = torch::empty({n, hidden}, opts);
  auto q = torch::empty({n, qdim}, opts);
  auto k = torch::empty({n, kvdim}, opts);
  auto v = torch::empty({n, kvdim}, opts);
  auto att = torch::empty({n, qdim}, opts);
  auto gate = torch::empty({n, inter}, opts);
  auto up = torch::empty({n, inter}, opts);
  auto delta = torch::empty({n, hidden}, opts);
  auto scratch = torch::empty({n, inter}, opts);
  float* dp_inter = scratch.data_ptr<float>();
  float* xp = x.data_ptr<float>();
  float* hp = h.data_ptr<float>();
  float* qp = q.data_ptr<float>();
  float* kp = k.data_ptr<float>();
  float* vp = v.data_ptr<float>();
  float* ap = att.data_ptr<float>();
  float* gp = gate.data_ptr<float>();
  float* up_ = up.data_ptr<float>();
  float* dp = delta.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* sp = sin.data_ptr<float>();
  const float feps = static_cast<float>(eps), fscale = static_cast<float>(scale);
  for (int64_t l = 0; l < layers; ++l) {
    const torch::Tensor* w = &layer_weights[l * 9];
    float* kl = keys.data_ptr<float>() + l * kv_heads * cap * d;
    float* vl = values.data_ptr<float>() + l * kv_heads * cap * d;
    rms_norm(xp, n, hidden, w[0].data_ptr<float>(), feps, hp);
    project(hp, n, hidden, w[1], qdim, qp);
    project(hp, n, hidden, w[2], kvdim, kp);
    project(hp, n, hidden, w[3], kvdim, vp);
    if (!biases.empty()) {
      add_bias(qp, n, qdim, biases[l * 3]);
      add_bias(kp, n, kvdim, biases[l * 3 + 1]);
      add_bias(vp, n, kvdim, biases[l * 3 + 2]);
    }
    rotate(qp, n, heads, d, cp, sp);
    rotate(kp, n, kv_heads, d, cp, sp);
    for (int64_t r = 0; r < n; ++r)            // [n, kv, d] -> buffers [kv, cap, d]
      for (int64_t g = 0; g < kv_heads; ++g) {
        std::copy_n(kp + (r * kv_heads + g) * d, d, kl + (g * cap + past + r) * d);
        std::copy_n(vp + (r * kv_heads + g) * d, d, vl + (g * cap + past + r) * d);
      }
    if (n >= many_rows)
      attend_many(qp, n, heads, kv_heads, d, keys[l][0], values[l][0], past, m, fscale, ap);
    else
      attend(qp, n, heads, kv_heads, d, kl, vl, cap, past, m, fscale, ap);
    project(ap, n, qdim, w[4], hidden, dp);
    for (int64_t i = 0; i < n * hidden; ++i) xp[i] += dp[i];
    rms_norm(xp, n, hidden, w[5].data_ptr<float>(), feps, hp);
    project(hp, n, hidden, w[6], inter, gp);
    project(hp, n, hidden, w[7], inter, up_);
    for (int64_t i = 0; i < n * inter; ++i) dp_inter[i] = -gp[i];
    exp_inplace(dp_inter, n * inter);
    for (int64_t i = 0; i < n * inter; ++i) gp[i] = gp[i] / (1.0f + dp_inter[i]) * up_[i];
    project(gp, n, inter, w[8], hidden, dp);
    for (int64_t i = 0; i < n * hidden; ++i) xp[i] += dp[i];
  }
  const int64_t kept = keep == 0 ? n : std::min(keep, n);
  auto outp = torch::empty({kept, hidden}, opts);
  rms_norm(xp + (n - kept) * hidden, kept, hidden, final_norm.data_ptr<float>(), feps,
           outp.data_ptr<float>());
  return outp;
}

// x [n, in] @ w [in, out] by the layers' projection (for tests and timing); storage: w's
// panels as float32, float16 or bfloat16 (every weight must be such a value)
torch::Tensor project_rows(torch::Tensor x, torch::Tensor w, const std::string& storage) {
  check(x, "x");
  check(w, "w");
  TORCH_CHECK(x.size(1) == w.size(0), "x and w do not chain");
  auto y = torch::empty({x.size(0), w.size(1)}, x.options());
  auto panels = pack_panels(w, storage);
  project(x.data_ptr<float>(), x.size(0), x.size(1), panels, w.size(1), y.data_ptr<float>());
  return y;
}

// x [n, in] @ w [in, out] from w's panels (pack_panels, once): the output layer's logits
torch::Tensor project_packed(torch::Tensor x, torch::Tensor panels, int64_t out) {
  check(x, "x");
  check_panels(panels, "panels");
  TORCH_CHECK(x.dim() == 2 && x.size(1) == panel_in(panels), "x [n, in] and the panels do not chain");
  TORCH_CHECK(out > (panels.size(0) - 1) * TILE && out <= panels.size(0) * TILE,
              "out: ", out, " columns do not fit ", panels.size(0), " panels");
  auto y = torch::empty({x.size(0), out}, x.options());
  project(x.data_ptr<float>(), x.size(0), x.size(1), panels, out, y.data_ptr<float>());
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("project_rows", &project_rows, "x @ w by the layers' projection", py::arg("x"),
        py::arg("w"), py::arg("storage") = "float32");
  // the long calls release the GIL: the server's event loop answers while a forward runs
  m.def("project_packed", &project_packed, "x @ w from w's panels",
        py::call_guard<py::gil_scoped_release>());
  m.def("pack_panels", &pack_panels, "w [in, out] as the projections' panels", py::arg("w"),
        py::arg("storage") = "float32");
  m.def("pack_int8_panels", &pack_int8_panels,
        "int8 w [in, out] and its column scales [out] as the projections' int8 panels");
  m.def("fast_half", &fast_half, "whether float16 panels are read by F16C");
  m.def("use_vnni", &use_vnni, "int8 panels times int8 rows by AVX-512 VNNI where the CPU "
        "has it (on: the default); returns whether they are", py::arg("on"));
  m.def("fast_bfloat16", &fast_bfloat16, "whether bfloat16 panels are widened by AVX2");
  m.def("layers_forward", &layers_forward, "the decoder layers of a few rows, in place",
        py::call_guard<py::gil_scoped_release>());
}
