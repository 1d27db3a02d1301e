// Fused sampled training step of He et al. 2025's single-query multi-head softmax attention
// (spec §7.1-7.2): per step and run, the batch is drawn from a counter-based generator, the
// forward pass, the closed-form backward pass, the batch reduction and the Adam update all run
// here, for R independent runs laid out [R, P]. The Python face is
// fastattn.training.batched (stream="fast"); the layout of one run's P parameters is
// wq [H, D, D], wk [H, D, D], wv [H, D, D], wo [H, D] (D = d + 1), row-major, concatenated.
#pragma once

#include <cstdint>

namespace fastattn::he_step {

// Prompts are processed in chunks of this many lanes (SIMD over prompts): one float32 vector in
// the target's widest registers (AVX-512F: 16, AVX2: 8, else 4: SSE2, AVX without AVX2, whose
// 256-bit registers lack the integer operations the generator needs, NEON). A vector wider than
// the target's registers has no machine mode, and the compiler then lowers every operation on it
// piecewise through memory. The batch reduction sums chunk partials in chunk order, so results
// do not depend on the number of threads; the lane count changes that order (rounding), never
// the stream's bits.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX2__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif

struct Shape {
  int H, d, L, B;  // heads, covariate dimension, context length, batch size
  int D() const { return d + 1; }
  long P() const { return 3L * H * D() * D() + long(H) * D(); }
  // Normals per prompt: x for L context tokens and the query, the task w, label noise for
  // the L + 1 labels (spec §2.1).
  int normals() const { return (L + 1) * d + d + (L + 1); }
};

// Data law per run: x = Fx eps, w = Fw eps, y = <x, w> + noise_std * eps.
struct Law {
  const double* x_factor;  // [R, d, d]
  const double* w_factor;  // [R, d, d]
  const double* noise_std; // [R]
};

struct Adam {
  const double* lr;  // [R]
  double beta1, beta2, eps;
};

// The standard normals of prompt b in batch `step` of the stream with key `seed`:
// out[n], n < shape.normals() (layout in docs/conventions.md, "He 2025 fast stream").
void normals(uint64_t seed, int64_t step, int64_t b, const Shape& shape, float* out);

// One batch of one run: tokens z [B, L, D], queries zq [B, D] (last entry 0), targets yq [B].
template <class T>
void sample(uint64_t seed, int64_t step, const Shape& shape, const double* x_factor,
            const double* w_factor, double noise_std, T* z, T* zq, T* yq);

// n_steps Adam steps of R runs, in place on theta, m, v [R, P]; Adam's step count of the first
// step is step0 + 1 and its batch is number step0. losses [R, n_record] receives each run's batch
// loss (before the update) at the relative steps record_at[0..n_record) (sorted).
template <class T>
void adam_steps(T* theta, T* m, T* v, int R, const Shape& shape, const uint64_t* seeds,
                const Law& law, const Adam& adam, int64_t step0, int64_t n_steps,
                const int64_t* record_at, int64_t n_record, double* losses, int threads);

}  // namespace fastattn::he_step
