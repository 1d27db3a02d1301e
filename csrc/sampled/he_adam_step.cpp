// Fused sampled Adam training of He et al. 2025's model (he_adam_step.h). Inner loops run over
// kLanes prompts at once so that the compiler vectorizes them; log, sin, cos and exp are
// written as polynomials for the same reason (libm calls do not vectorize without -ffast-math).
#include "sampled/he_adam_step.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace fastattn::he_step {
namespace {

constexpr int W = kLanes;

// Vectors of prompts in the run's dtype (GCC/Clang vector extensions), all as wide as the
// target's float32 vector: kLanes floats, kLanes / 2 doubles (wider ones would be lowered
// piecewise). A chunk of kLanes prompts is therefore processed in Parts<T> parts of Lanes<T>
// prompts (float64: two). F: the float32 normals of V's lanes.
template <class T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(W * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(W * sizeof(float))));
  typedef float F __attribute__((vector_size(W * sizeof(float))));
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(W * sizeof(float))));
  typedef int64_t I __attribute__((vector_size(W * sizeof(float))));
  typedef float F __attribute__((vector_size(W * sizeof(float) / 2)));
};
template <class T>
using Vec = typename Simd<T>::V;
template <class T>
constexpr int Lanes = int(W * sizeof(float) / sizeof(T));
template <class T>
constexpr int Parts = W / Lanes<T>;

template <class T>
inline T lane_sum(const Vec<T>& v) {
  T acc = 0;
  for (int w = 0; w < Lanes<T>; ++w) acc += v[w];
  return acc;
}

// The Box-Muller stage on the kLanes lanes of a block, in float32 whatever the run's dtype. The
// functions are written on whole vectors (not as loops over lanes for the compiler to vectorize)
// so that they use the target's widest registers.
using Fv = Vec<float>;
using Iv = Simd<float>::I;
typedef uint32_t Uv __attribute__((vector_size(W * sizeof(float))));

// Unaligned whole-vector loads and stores: GCC lowers std::memcpy of a 512-bit vector through
// 256-bit halves (its preferred vector width on AVX-512 targets), whose two stores then cannot be
// forwarded to the next whole-vector load of the same bytes.
template <class V>
inline V load(const void* p) {
  typedef V U __attribute__((aligned(1), may_alias));
  return *static_cast<const U*>(p);
}
template <class V>
inline void store(void* p, const V& x) {
  typedef V U __attribute__((aligned(1), may_alias));
  *static_cast<U*>(p) = x;
}

// √y for y > 0 by three Newton steps on 1/√y from the bit-level first guess (bit-for-bit the
// stream's definition in the C++ core; the hardware square root rounds differently).
inline Fv sqrt_positive(Fv y) {
  Fv g = (Fv)(0x5f3759dfu - ((Uv)y >> 1));
  for (int i = 0; i < 3; ++i) g = g * (1.5f - 0.5f * y * g * g);
  return y * g;
}

// (x >> 9 + 1/2) 2^-23 of the low 32 bits of each word: exact in float32, in (0, 1). Written as
// (x >> 9) 2^-23 + 2^-24, whose product and sum are exact too, so that it contracts to one FMA.
inline Fv uniform(const Uv& x) {
  return __builtin_convertvector((Iv)(x >> 9), Fv) * 1.1920928955078125e-07f + 5.9604644775390625e-08f;
}

// -2 log(u) for u in (0, 1): u = m 2^e with m in [√½, √2), log m = 2 atanh((m-1)/(m+1)) to s^9,
// e log 2 + log m scaled by -2 (exact: both terms are scaled before their one rounding).
inline Fv minus_two_log_unit(Fv u) {
  // e = the exponent of u, plus one when its mantissa exceeds √2's (then m = the mantissa / 2):
  // subtracting the bits just above √½'s carries into the exponent field exactly then
  const Iv bits = (Iv)u, e = (bits - 0x3f3504f4) >> 23;
  const Fv m = (Fv)(bits - (e << 23));
  const Fv s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const Fv series = 1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9))));
  return __builtin_convertvector(e, Fv) * (-2 * 0.693147180559945f) + -4.0f * s * series;
}

// cos and sin of 2πt for t in [0, 1): quadrant q = round(4t), φ = 2π(t - q/4) in [-π/4, π/4].
inline void sincos_turn(Fv t, Fv& c, Fv& s) {
  const Iv q = __builtin_convertvector(4.0f * t + 0.5f, Iv);
  const Fv phi = 6.28318530717958647f * (t - 0.25f * __builtin_convertvector(q, Fv)), p2 = phi * phi;
  const Fv sp = phi * (1.0f + p2 * (-1.0f / 6 + p2 * (1.0f / 120 + p2 * (-1.0f / 5040 +
                                                                       p2 * (1.0f / 362880)))));
  const Fv cp = 1.0f + p2 * (-0.5f + p2 * (1.0f / 24 + p2 * (-1.0f / 720 + p2 * (1.0f / 40320 +
                                                                           p2 * (-1.0f / 3628800)))));
  // rotate by q quarter turns: odd q swaps (cos, sin) -> (-sin, cos); q = 2, 3 flip both signs
  // (sign bits: bit 1 of q flips both, bit 0 the cosine)
  const Iv odd = (q & 1) != 0;
  const Iv flip = (q << 30) & int32_t(0x80000000u);
  c = (Fv)((Iv)(odd ? sp : cp) ^ flip ^ (q << 31));
  s = (Fv)((Iv)(odd ? cp : sp) ^ flip);
}

// exp(x) for x <= 0 (softmax logits minus their maximum): 2^n e^r, |r| <= ln2/2, Taylor series
// to the dtype's precision.
template <class T>
inline Vec<T> exp_nonpositive(const Vec<T>& arg) {
  using V = Vec<T>;
  constexpr bool f32 = std::is_same_v<T, float>;
  const V lo = V{} + T(f32 ? -87.0 : -708.0);
  const V x = arg < lo ? lo : arg;
  const V y = x * T(1.4426950408889634) + T(0.5);
#if defined(__AVX512F__)
  // floor(y) and p 2^n below in one instruction each (the same values: both exact, and the
  // scaling rounds once, as the product with 2^n does), in their all-lanes masked forms (GCC 12
  // warns that the unmasked forms' undefined source may be used uninitialized)
  constexpr int floor_mode = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
  V n;
  if constexpr (f32)
    n = (V)_mm512_maskz_roundscale_ps(0xffff, (__m512)y, floor_mode);
  else
    n = (V)_mm512_maskz_roundscale_pd(0xff, (__m512d)y, floor_mode);
#else
  using I = typename Simd<T>::I;
  V n = __builtin_convertvector(__builtin_convertvector(y, I), V);  // trunc; floor for y < 0:
  n = n > y ? n - T(1) : n;
#endif
  const V r = (x - n * T(f32 ? 0.693145751953125 : 0.6931471803691238)) -
              n * T(f32 ? 1.428606765330187e-06 : 1.9082149292705877e-10);
  V p;
  if constexpr (f32) {
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                                                                          r * (1.0f / 720 + r * (1.0f / 5040)))))));
  } else {
    p = V{} + 1.0 / 479001600;
    for (double c : {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                     1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
      p = p * r + c;
  }
#if defined(__AVX512F__)
  if constexpr (f32)
    return (V)_mm512_maskz_scalef_ps(0xffff, (__m512)p, (__m512)n);
  else
    return (V)_mm512_maskz_scalef_pd(0xff, (__m512d)p, (__m512d)n);
#else
  const I bits = (__builtin_convertvector(n, I) + (f32 ? 127 : 1023)) << (f32 ? 23 : 52);
  return p * (V)bits;  // the bits as floats
#endif
}

// Philox4x32-10's words, one per lane, in 64-bit elements of vectors as wide as a float vector
// (the target's widest): a chunk's W lanes take two vectors.
typedef uint64_t Words __attribute__((vector_size(W * sizeof(float))));
constexpr int kWordsLanes = W / 2;

// Philox's 32 x 32 -> 64-bit products on words: the product of the low halves, the high halves
// ignored (so the rounds below never mask them off). pmuludq (x86) and xtn + umull (aarch64) do
// exactly this; GCC emits a slow full 64-bit multiply for the portable expression (vpmullq, a
// pmuludq sequence, or scalar multiplies on aarch64).
inline Words mul_lo32(Words a, uint32_t k) {
#if defined(__AVX512F__)
  return (Words)_mm512_mul_epu32((__m512i)a, _mm512_set1_epi64(k));
#elif defined(__AVX2__)
  return (Words)_mm256_mul_epu32((__m256i)a, _mm256_set1_epi64x(k));
#elif defined(__SSE2__)
  return (Words)_mm_mul_epu32((__m128i)a, _mm_set1_epi64x(k));
#elif defined(__aarch64__)
  return (Words)vmull_n_u32(vmovn_u64((uint64x2_t)a), k);
#else
  return (a & 0xffffffffu) * uint64_t(k);
#endif
}

// The low 32 bits of the words of lanes 0 .. W-1 (the first W / 2 in lo, the rest in hi). On a
// little-endian target they are the even 32-bit elements of the two vectors: one shuffle.
#if defined(__has_builtin) && __has_builtin(__builtin_shufflevector) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
template <size_t... I>
inline Uv even_elements(const Words& lo, const Words& hi, std::index_sequence<I...>) {
  return __builtin_shufflevector((Uv)lo, (Uv)hi, (2 * I)...);
}
inline Uv low_words(const Words* c) {
  return even_elements(c[0], c[1], std::make_index_sequence<W>{});
}
#else
inline Uv low_words(const Words* c) {
  Uv out;
  for (int w = 0; w < W; ++w) out[w] = uint32_t(c[w / kWordsLanes][w % kWordsLanes]);
  return out;
}
#endif

// Standard normals n = 0 .. 4·blocks-1 of prompts b0 .. b0+W-1: eps[n * W + lane]. Block j is
// Philox4x32-10 written exactly as triton.language.random.philox_impl (so that the Triton kernel
// draws the same bits), counter (j, prompt, step_lo, step_hi), key (seed_lo, seed_hi), then
// Box-Muller. The rounds run on vectors of 64-bit words (only their low 32 bits are meaningful:
// the products read only those, and low_words takes the low halves); Box-Muller runs on whole
// float vectors.
void normals_chunk(uint64_t seed, int64_t step, int64_t b0, int blocks, float* eps) {
  constexpr int NV = W / kWordsLanes;  // vectors per word of the block
  const uint64_t s0 = uint32_t(uint64_t(step)), s1 = uint32_t(uint64_t(step) >> 32);
  Words prompt[NV];
  for (int v = 0; v < NV; ++v)
    for (int w = 0; w < kWordsLanes; ++w) prompt[v][w] = uint32_t(b0 + kWordsLanes * v + w);
  // Philox for every block first, its words parked in eps, then Box-Muller in place: each loop's
  // body is short enough for the out-of-order core to overlap consecutive blocks (one block's
  // Philox and Box-Muller back to back form a dependency chain longer than its throughput cost).
  Uv* words = reinterpret_cast<Uv*>(eps);
  for (int j = 0; j < blocks; ++j) {
    Words c0[NV], c1[NV], c2[NV], c3[NV];
    for (int v = 0; v < NV; ++v) {
      c0[v] = Words{} + uint64_t(uint32_t(j));
      c1[v] = prompt[v];
      c2[v] = Words{} + s0;
      c3[v] = Words{} + s1;
    }
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int i = 0; i < 10; ++i) {
      for (int v = 0; v < NV; ++v) {
        const Words pb = mul_lo32(c2[v], 0xCD9E8D57u), pa = mul_lo32(c0[v], 0xD2511F53u);
        const Words n0 = (pb >> 32) ^ c1[v] ^ uint64_t(k0), n2 = (pa >> 32) ^ c3[v] ^ uint64_t(k1);
        c1[v] = pb;
        c3[v] = pa;
        c0[v] = n0;
        c2[v] = n2;
      }
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    store(words + 4L * j, low_words(c0));
    store(words + 4L * j + 1, low_words(c1));
    store(words + 4L * j + 2, low_words(c2));
    store(words + 4L * j + 3, low_words(c3));
  }
  for (int j = 0; j < blocks; ++j) {
    const Uv u[4] = {load<Uv>(words + 4L * j), load<Uv>(words + 4L * j + 1),
                     load<Uv>(words + 4L * j + 2), load<Uv>(words + 4L * j + 3)};
    const Fv r0 = sqrt_positive(minus_two_log_unit(uniform(u[0])));
    const Fv r1 = sqrt_positive(minus_two_log_unit(uniform(u[2])));
    Fv cs0, sn0, cs1, sn1;
    sincos_turn(uniform(u[1]), cs0, sn0);
    sincos_turn(uniform(u[3]), cs1, sn1);
    float* out = eps + 4L * j * W;
    store(out, r0 * cs0);
    store(out + W, r0 * sn0);
    store(out + 2 * W, r1 * cs1);
    store(out + 3 * W, r1 * sn1);
  }
}

int blocks_of(const Shape& sh) { return (sh.normals() + 3) / 4; }

// The blocks a batch of a run with label-noise std sigma reads: without noise, not the label
// noise's (the last L + 1 normals). A counter-based stream draws each block on its own, so the
// blocks read are the same bits either way.
int blocks_read(const Shape& sh, double sigma) {
  return sigma == 0 ? (sh.normals() - (sh.L + 1) + 3) / 4 : blocks_of(sh);
}

bool is_identity(const double* f, int d) {
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k)
      if (f[i * d + k] != (i == k ? 1.0 : 0.0)) return false;
  return true;
}

// Per-run law converted to T once per call.
template <class T>
struct RunLaw {
  std::vector<T> fx, fw;
  bool fx_identity;
  T sigma;
  RunLaw(const double* x_factor, const double* w_factor, double noise_std, int d)
      : fx(x_factor, x_factor + d * d), fw(w_factor, w_factor + d * d),
        fx_identity(is_identity(x_factor, d)), sigma(T(noise_std)) {}
};

// Scratch of one thread; eps holds a chunk's normals (whole vectors: aligned as they are), the
// token arrays a part's Lanes<T> lanes per entry ([..][Lanes<T>] in memory).
template <class T>
struct Work {
  using V = Vec<T>;
  std::vector<Fv> eps_;
  std::vector<V> x, y, zq, tok, u, s, p, vv, a, head, du;
  explicit Work(const Shape& sh) {
    const int D = sh.D(), L = sh.L, H = sh.H;
    eps_.resize(blocks_of(sh) * 4L);
    x.resize(long(L + 1) * sh.d);
    y.resize(L + 1);
    zq.resize(D);
    tok.resize(sh.d);
    u.resize(D);
    s.resize(L);
    p.resize(long(H) * L);
    vv.resize(long(H) * L);
    a.resize(long(H) * D);
    head.resize(H);
    du.resize(D);
  }
  float* eps() { return reinterpret_cast<float*>(eps_.data()); }
};

// One part's tokens from its normals (those of the chunk in wk.eps, from the part's first lane
// on), each a vector of the part's Lanes<T> lanes: x = Fx eps, w = Fw eps, y = <x, w> + sigma
// eps. Returns x [L + 1][d] (token l's coordinate i at l d + i; l = L is the query): the
// normals themselves when they are x (float32, Fx = I: the layout is the stream's), else
// wk.x; the labels y [L + 1] (y[L]: the query's target) go to wk.y.
template <class T>
const Vec<T>* tokens_part(int part, const Shape& sh, const RunLaw<T>& law, Work<T>& wk) {
  using V = Vec<T>;
  const int d = sh.d, L = sh.L;
  const float* eps = wk.eps() + part * Lanes<T>;
  auto normal = [eps](long n) {  // normal n of the part's lanes, in T
    return __builtin_convertvector(load<typename Simd<T>::F>(eps + n * W), V);
  };
  const T* fx = law.fx.data();
  const T* fw = law.fw.data();
  const long we = long(L + 1) * d, ne = we + d;
  V* task = wk.tok.data();
  for (int i = 0; i < d; ++i) {
    V acc = V{};
    for (int k = 0; k < d; ++k) acc += fw[i * d + k] * normal(we + k);
    task[i] = acc;
  }
  const bool in_place = std::is_same_v<T, float> && law.fx_identity;
  V* x = in_place ? reinterpret_cast<V*>(wk.eps()) : wk.x.data();
  for (int l = 0; l <= L; ++l) {
    V y = law.sigma == 0 ? V{} : law.sigma * normal(ne + l);  // no noise: its normals are not drawn
    V* xl = x + long(l) * d;
    for (int i = 0; i < d; ++i) {
      if (!in_place) {
        if (law.fx_identity) {
          xl[i] = normal(long(l) * d + i);
        } else {
          V acc = V{};
          for (int k = 0; k < d; ++k) acc += fx[i * d + k] * normal(long(l) * d + k);
          xl[i] = acc;
        }
      }
      y += xl[i] * task[i];
    }
    wk.y[l] = y;
  }
  return x;
}

// kq [H][D][D] = W_K^T W_Q / √D and ov [H][D] = W_O W_V of one run's parameters.
template <class T>
void circuits(const T* theta, const Shape& sh, T* out) {
  const int H = sh.H, D = sh.D();
  const long HDD = long(H) * D * D;
  const T* wq = theta;
  const T* wk = theta + HDD;
  const T* wv = theta + 2 * HDD;
  const T* wo = theta + 3 * HDD;
  const T scale = T(1) / std::sqrt(T(D));
  T* kq = out;
  T* ov = out + HDD;
  for (int h = 0; h < H; ++h) {
    const long o = long(h) * D * D;
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) {
        T acc = 0;
        for (int m = 0; m < D; ++m) acc += wk[o + m * D + i] * wq[o + m * D + j];
        kq[o + i * D + j] = acc * scale;
      }
    for (int j = 0; j < D; ++j) {
      T acc = 0;
      for (int i = 0; i < D; ++i) acc += wo[h * D + i] * wv[o + i * D + j];
      ov[h * D + j] = acc;
    }
  }
}

// Forward and backward of part `part` of a chunk (prompts b0 .. b0+Lanes<T>-1 of batch `step`;
// the chunk's normals in wk.eps), written (part 0) or added (the others) to the chunk's partial,
// per lane (summed over lanes once per step, in finish): [G (H D D) = Σ_b ∂L/∂u_bh z_qbᵀ,
// ∂L/∂ov (H D), Σ_b err_b²]. FixedD > 0: the token dimension D as a compile-time constant (He's
// d = 5: the loops over D unroll), else sh.D().
template <class T, int FixedD>
void part_grad(const T* circ, int64_t b0, int part, const Shape& sh, const RunLaw<T>& law,
               Work<T>& wk, Vec<T>* partial) {
  using V = Vec<T>;
  const int H = sh.H, D = FixedD > 0 ? FixedD : sh.D(), L = sh.L;
  const long HDD = long(H) * D * D;
  const T* kq = circ;
  const T* ov = circ + HDD;
  const int d = D - 1;
  // token l = (x[l d .. l d + d), y[l]); the query zq = (x[L d ..], 0)
  const V* x = tokens_part(part, sh, law, wk);
  const V* y = wk.y.data();
  V* zq = wk.zq.data();
  std::copy(x + long(L) * d, x + long(L) * d + d, zq);
  zq[d] = V{};
  auto put = [part](V& to, const V& v) { to = part == 0 ? v : to + v; };
  V* u = wk.u.data();
  V* s = wk.s.data();
  // sums over the keys, in registers when D is fixed (through a pointer they stay in memory,
  // which may alias the token arrays)
  V acc[FixedD > 0 ? FixedD : 1];
  V yhat = V{};
  for (int h = 0; h < H; ++h) {
    V* p = wk.p.data() + long(h) * L;
    V* vv = wk.vv.data() + long(h) * L;
    V* a = wk.a.data() + long(h) * D;
    const T* kqh = kq + long(h) * D * D;
    const T* ovh = ov + long(h) * D;
    for (int i = 0; i < D; ++i) {
      V acc = V{};
      for (int j = 0; j < D; ++j) acc += kqh[i * D + j] * zq[j];
      u[i] = acc;
    }
    V mx = V{} - std::numeric_limits<T>::infinity();  // the largest logit, found on the way
    for (int l = 0; l < L; ++l) {
      V sl = V{}, vl = V{};
      for (int i = 0; i < d; ++i) {
        sl += u[i] * x[l * d + i];
        vl += ovh[i] * x[l * d + i];
      }
      sl += u[d] * y[l];
      vl += ovh[d] * y[l];
      s[l] = sl;
      vv[l] = vl;
      mx = mx > sl ? mx : sl;
    }
    V sum = V{};
    for (int l = 0; l < L; ++l) {
      p[l] = exp_nonpositive<T>(s[l] - mx);
      sum += p[l];
    }
    const V inv = T(1) / sum;
    // one pass over the keys with D + 1 independent sums (each in key order): a sum per pass
    // over the keys would be a chain of L dependent FMAs
    V hd = V{};
    V* at = FixedD > 0 ? acc : a;
    for (int i = 0; i < D; ++i) at[i] = V{};
    for (int l = 0; l < L; ++l) {
      p[l] *= inv;
      hd += p[l] * vv[l];
      for (int i = 0; i < d; ++i) at[i] += p[l] * x[l * d + i];
      at[d] += p[l] * y[l];
    }
    if (FixedD > 0) std::copy(acc, acc + D, a);
    wk.head[h] = hd;
    yhat += hd;
  }
  const int valid = int(std::clamp<int64_t>(sh.B - b0, 0, Lanes<T>));
  V err = yhat - y[L];
  for (int w = valid; w < Lanes<T>; ++w) err[w] = 0;
  const V e = err * (T(2) / T(sh.B));
  V* G = partial;
  V* dov = partial + HDD;
  put(partial[HDD + H * D], err * err);
  V* du = FixedD > 0 ? acc : wk.du.data();
  for (int h = 0; h < H; ++h) {
    const V* p = wk.p.data() + long(h) * L;
    const V* vv = wk.vv.data() + long(h) * L;
    const V* a = wk.a.data() + long(h) * D;
    const V hd = wk.head[h];
    for (int i = 0; i < D; ++i) put(dov[h * D + i], e * a[i]);
    for (int i = 0; i < D; ++i) du[i] = V{};
    for (int l = 0; l < L; ++l) {
      const V dl = p[l] * (vv[l] - hd) * e;
      for (int i = 0; i < d; ++i) du[i] += dl * x[l * d + i];
      du[d] += dl * y[l];
    }
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) put(G[long(h) * D * D + i * D + j], du[i] * zq[j]);
  }
}

// Forward and backward of one chunk (prompts b0 .. b0+W-1): its normals, then its parts.
template <class T, int FixedD>
void chunk_grad(const T* circ, uint64_t seed, int64_t step, int64_t b0, const Shape& sh,
                const RunLaw<T>& law, Work<T>& wk, Vec<T>* partial) {
  normals_chunk(seed, step, b0, blocks_read(sh, law.sigma), wk.eps());
  for (int part = 0; part < Parts<T>; ++part)
    part_grad<T, FixedD>(circ, b0 + part * Lanes<T>, part, sh, law, wk, partial);
}

// Sum the chunk partials in chunk order, then over lanes, chain to the factors, one Adam step;
// returns the loss.
template <class T>
double finish(T* theta, T* m, T* v, const Vec<T>* partials, int chunks, const Shape& sh, double lr,
              const Adam& adam, int64_t t, std::vector<T>& buf) {
  using V = Vec<T>;
  const int H = sh.H, D = sh.D();
  const long HDD = long(H) * D * D, S = HDD + H * D + 1, P = sh.P();
  buf.assign(S + P, T(0));
  T* tot = buf.data();
  for (long q = 0; q < S; ++q) {
    V acc = V{};
    for (int c = 0; c < chunks; ++c) acc += partials[c * S + q];
    tot[q] = lane_sum<T>(acc);
  }
  const T* G = tot;
  const T* dov = tot + HDD;
  T* g = buf.data() + S;
  const T* wq = theta;
  const T* wk = theta + HDD;
  const T* wv = theta + 2 * HDD;
  const T* wo = theta + 3 * HDD;
  const T inv = T(1) / std::sqrt(T(D));
  for (int h = 0; h < H; ++h) {
    const long o = long(h) * D * D;
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b) {
        T gq = 0, gk = 0;
        for (int i = 0; i < D; ++i) {
          gq += wk[o + a * D + i] * G[o + i * D + b];
          gk += wq[o + a * D + i] * G[o + b * D + i];
        }
        g[o + a * D + b] = gq * inv;
        g[HDD + o + a * D + b] = gk * inv;
        g[2 * HDD + o + a * D + b] = wo[h * D + a] * dov[h * D + b];
      }
    for (int i = 0; i < D; ++i) {
      T acc = 0;
      for (int j = 0; j < D; ++j) acc += wv[o + i * D + j] * dov[h * D + j];
      g[3 * HDD + h * D + i] = acc;
    }
  }
  const double bias1 = 1.0 - std::pow(adam.beta1, double(t));
  const T bias2_sqrt = T(std::sqrt(1.0 - std::pow(adam.beta2, double(t))));
  const T step_size = T(lr / bias1), b1c = T(1.0 - adam.beta1), b2 = T(adam.beta2),
          b2c = T(1.0 - adam.beta2), eps = T(adam.eps);
  for (long q = 0; q < P; ++q) {
    m[q] += b1c * (g[q] - m[q]);
    v[q] = v[q] * b2 + b2c * g[q] * g[q];
    theta[q] -= step_size * (m[q] / (std::sqrt(v[q]) / bias2_sqrt + eps));
  }
  return double(tot[S - 1]) / sh.B;
}

// A reusable spinning barrier (yields while waiting: the machine may be oversubscribed).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    const int gen = gen_.load();
    if (count_.fetch_add(1) + 1 == n_) {
      count_.store(0);
      gen_.fetch_add(1);
    } else {
      while (gen_.load() == gen) std::this_thread::yield();
    }
  }

 private:
  const int n_;
  std::atomic<int> count_{0}, gen_{0};
};

}  // namespace

void normals(uint64_t seed, int64_t step, int64_t b, const Shape& shape, float* out) {
  const int blocks = blocks_of(shape);
  std::vector<float> eps(4L * blocks * W);
  normals_chunk(seed, step, b, blocks, eps.data());
  for (int n = 0; n < shape.normals(); ++n) out[n] = eps[long(n) * W];
}

template <class T>
void sample(uint64_t seed, int64_t step, const Shape& sh, const double* x_factor,
            const double* w_factor, double noise_std, T* z, T* zq, T* yq) {
  const RunLaw<T> law(x_factor, w_factor, noise_std, sh.d);
  Work<T> wk(sh);
  const int D = sh.D(), d = sh.d, L = sh.L;
  constexpr int VL = Lanes<T>;
  for (int64_t b0 = 0; b0 < sh.B; b0 += W) {
    normals_chunk(seed, step, b0, blocks_read(sh, noise_std), wk.eps());
    for (int part = 0; part < Parts<T>; ++part) {
      const T* xs = reinterpret_cast<const T*>(tokens_part(part, sh, law, wk));
      const T* ys = reinterpret_cast<const T*>(wk.y.data());
      for (int w = 0; w < VL && b0 + part * VL + w < sh.B; ++w) {
        const int64_t b = b0 + part * VL + w;
        for (int l = 0; l <= L; ++l) {
          T* to = l < L ? z + (b * L + l) * D : zq + b * D;
          for (int i = 0; i < d; ++i) to[i] = xs[(long(l) * d + i) * VL + w];
          to[d] = l < L ? ys[l * VL + w] : T(0);
        }
        yq[b] = ys[L * VL + w];
      }
    }
  }
}

template <class T>
void adam_steps(T* theta, T* m, T* v, int R, const Shape& sh, const uint64_t* seeds,
                const Law& law, const Adam& adam, int64_t step0, int64_t n_steps,
                const int64_t* record_at, int64_t n_record, double* losses, int threads) {
  const int chunks = (sh.B + W - 1) / W;
  const long P = sh.P(), S = long(sh.H) * sh.D() * sh.D() + sh.H * sh.D() + 1;
  const long C = long(sh.H) * sh.D() * sh.D() + sh.H * sh.D();
  std::vector<RunLaw<T>> laws;
  for (int r = 0; r < R; ++r)
    laws.emplace_back(law.x_factor + long(r) * sh.d * sh.d, law.w_factor + long(r) * sh.d * sh.d,
                      law.noise_std[r], sh.d);
  std::vector<Vec<T>> partials(long(R) * chunks * S);
  std::vector<int64_t> next_record(R, 0);
  threads = std::max(1, std::min(threads, R * chunks));
  // R >= threads: each thread owns whole runs and never waits; otherwise the chunks of every
  // run are shared out and the threads meet twice per step. Both reduce chunk partials in
  // chunk order, so the numbers are the same.
  const bool own_runs = R >= threads;
  const auto grad_of = sh.D() == 6 ? chunk_grad<T, 6> : chunk_grad<T, 0>;
  Barrier barrier(threads);
  auto worker = [&](int tid) {
    Work<T> wk(sh);
    std::vector<T> circ(long(R) * C), buf;
    for (int64_t k = 0; k < n_steps; ++k) {
      const int64_t step = step0 + k;
      auto finish_run = [&](int r) {
        const double loss = finish(theta + r * P, m + r * P, v + r * P, &partials[long(r) * chunks * S],
                                   chunks, sh, adam.lr[r], adam, step + 1, buf);
        int64_t& q = next_record[r];
        if (q < n_record && record_at[q] == k) losses[long(r) * n_record + q++] = loss;
      };
      if (own_runs) {
        for (int r = tid; r < R; r += threads) {
          circuits(theta + r * P, sh, circ.data());
          for (int c = 0; c < chunks; ++c)
            grad_of(circ.data(), seeds[r], step, int64_t(c) * W, sh, laws[r], wk,
                       &partials[(long(r) * chunks + c) * S]);
          finish_run(r);
        }
      } else {
        for (int r = 0; r < R; ++r) circuits(theta + r * P, sh, circ.data() + r * C);
        for (long q = tid; q < long(R) * chunks; q += threads) {
          const int r = int(q / chunks), c = int(q % chunks);
          grad_of(circ.data() + r * C, seeds[r], step, int64_t(c) * W, sh, laws[r], wk,
                     &partials[q * S]);
        }
        barrier.wait();
        for (int r = tid; r < R; r += threads) finish_run(r);
        barrier.wait();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
}

template void sample<float>(uint64_t, int64_t, const Shape&, const double*, const double*, double,
                            float*, float*, float*);
template void sample<double>(uint64_t, int64_t, const Shape&, const double*, const double*,
                             double, double*, double*, double*);
template void adam_steps<float>(float*, float*, float*, int, const Shape&, const uint64_t*,
                                const Law&, const Adam&, int64_t, int64_t, const int64_t*, int64_t,
                                double*, int);
template void adam_steps<double>(double*, double*, double*, int, const Shape&, const uint64_t*,
                                 const Law&, const Adam&, int64_t, int64_t, const int64_t*,
                                 int64_t, double*, int);

}  // namespace fastattn::he_step
