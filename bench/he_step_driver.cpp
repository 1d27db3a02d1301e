// Standalone timing of the fused He 2025 Adam step (csrc/sampled/he_adam_step.cpp) outside Python,
// for same-run A/B comparisons of two versions of that file and of builds for other targets
// (docs/performance.md). Build, with the core's optimisation and the target's flags:
//   g++ -O3 -std=c++17 -march=native -Icsrc bench/he_step_driver.cpp
//       csrc/sampled/he_adam_step.cpp -lpthread -o he_step_driver
// Usage: he_step_driver [steps 2000] [repeats 3] [noise_std 0.1] [heads 2] [f|d] [d 5] [skew]
// One run, L = 40, B = 256, F_x = I (or with one off-diagonal entry when a seventh argument is
// given), F_w = I/√5, 50 warm-up steps, then the best of `repeats` CPU times of `steps` steps on
// one thread. It prints ms/step, hashes of the final parameters and of the stream's normals (64
// prompts of batch 3) and a loss, so that two versions can be checked to give the same bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "sampled/he_adam_step.h"

using namespace fastattn::he_step;

namespace {

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// FNV-1a over the values' bytes
template <class T>
uint64_t fnv(const std::vector<T>& values) {
  uint64_t h = 1469598103934665603ull;
  for (const T& x : values) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &x, sizeof(T));
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

template <class T>
int run(int steps, int repeats, double noise, int heads, int d, bool skew) {
  const Shape sh{heads, d, 40, 256};
  const long P = sh.P();
  std::vector<T> theta(P), m(P, T(0)), v(P, T(0));
  for (long i = 0; i < P; ++i) theta[i] = T(0.1 * std::sin(1.0 + double(i)));
  std::vector<double> fx(d * d, 0.0), fw(d * d, 0.0);
  for (int i = 0; i < d; ++i) {
    fx[i * (d + 1)] = 1.0;
    fw[i * (d + 1)] = 1.0 / std::sqrt(5.0);
  }
  if (skew) fx[1] = 0.3;
  const double lr = 1e-3;
  const uint64_t seed = 7;
  const Law law{fx.data(), fw.data(), &noise};
  const Adam adam{&lr, 0.9, 0.999, 1e-8};
  const int64_t record_at = 0;
  double loss = 0;
  adam_steps<T>(theta.data(), m.data(), v.data(), 1, sh, &seed, law, adam, 0, 50, &record_at, 1,
                &loss, 1);
  double best = 1e300;
  int64_t step0 = 50;
  for (int r = 0; r < repeats; ++r, step0 += steps) {
    const double start = cpu_seconds();
    adam_steps<T>(theta.data(), m.data(), v.data(), 1, sh, &seed, law, adam, step0, steps,
                  &record_at, 1, &loss, 1);
    best = std::min(best, (cpu_seconds() - start) / steps);
  }
  std::vector<float> eps, one(sh.normals());
  for (int b = 0; b < 64; ++b) {
    normals(seed, 3, b, sh, one.data());
    eps.insert(eps.end(), one.begin(), one.end());
  }
  std::printf("%.4f ms/step  parameters %016llx  normals %016llx  first batch loss of the last call %.9g\n", best * 1e3,
              (unsigned long long)fnv(theta), (unsigned long long)fnv(eps), loss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const double noise = argc > 3 ? std::atof(argv[3]) : 0.1;
  const int heads = argc > 4 ? std::atoi(argv[4]) : 2;
  const bool float64 = argc > 5 && argv[5][0] == 'd';
  const int d = argc > 6 ? std::atoi(argv[6]) : 5;
  const bool skew = argc > 7;
  return float64 ? run<double>(steps, repeats, noise, heads, d, skew)
                 : run<float>(steps, repeats, noise, heads, d, skew);
}
