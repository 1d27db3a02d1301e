// Hessian-vector products by complex-step (forward-mode) differentiation of a gradient written once
// for a scalar type T, double or std::complex<double>. For code analytic in theta,
//   grad(theta + i h u) = grad(theta) + i h H(theta) u + O(h^2),
// and the imaginary part carries the directional derivative with no subtractive cancellation: with
// h |u|_inf = 1e-20 the O(h^2) term is below rounding, so Im(grad)/h is H u to machine precision (it
// is forward mode with i h as the dual unit). The gradient code must stay analytic: no conj (Eigen's
// dot conjugates: use cwiseProduct(..).sum()), no abs; comparisons (softmax shifts, branches of a
// stable sigmoid) read the real part, which is exact because a softmax is shift-invariant.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <memory>
#include <vector>

#include "objective.h"

namespace fastattn::complex_step {

using Cplx = std::complex<double>;

inline double real_part(double x) { return x; }
inline double real_part(const Cplx& x) { return x.real(); }

// grad(theta, out): the gradient in complex arithmetic, P entries each.
using ComplexGradient = std::function<void(const Cplx* theta, Cplx* grad)>;

// out <- H(theta) u through one complex gradient evaluation.
inline void hvp(const ComplexGradient& grad, Index P, const double* theta, const double* u, double* out) {
  double umax = 0.0;
  for (Index k = 0; k < P; ++k) umax = std::max(umax, std::abs(u[k]));
  if (umax == 0.0) {
    std::fill(out, out + P, 0.0);
    return;
  }
  const double h = 1e-20 / umax;
  std::vector<Cplx> z(P), g(P);
  for (Index k = 0; k < P; ++k) z[k] = Cplx(theta[k], h * u[k]);
  grad(z.data(), g.data());
  for (Index k = 0; k < P; ++k) out[k] = g[k].imag() / h;
}

// The dense Hessian [P, P] row-major: P products with the unit vectors, symmetrised (the columns
// agree with the rows to rounding).
inline void hessian(const ComplexGradient& grad, Index P, const double* theta, double* out) {
  std::vector<double> e(P, 0.0), col(P);
  for (Index j = 0; j < P; ++j) {
    e[j] = 1.0;
    hvp(grad, P, theta, e.data(), col.data());
    e[j] = 0.0;
    for (Index i = 0; i < P; ++i) out[i * P + j] = col[i];
  }
  for (Index i = 0; i < P; ++i)
    for (Index j = i + 1; j < P; ++j) out[i * P + j] = out[j * P + i] = 0.5 * (out[i * P + j] + out[j * P + i]);
}

// A Hessian operator over a complex gradient (prepare stores theta; each apply is one evaluation).
class Operator : public HessianOperator {
 public:
  Operator(ComplexGradient grad, Index P) : grad_(std::move(grad)), theta_(P) {}
  void prepare(const double* theta) override { std::copy(theta, theta + theta_.size(), theta_.begin()); }
  void apply(const double* u, double* out) override {
    hvp(grad_, Index(theta_.size()), theta_.data(), u, out);
  }

 private:
  ComplexGradient grad_;
  std::vector<double> theta_;
};

}  // namespace fastattn::complex_step
