// The 3-parameter induction-head model of Musat et al. 2025 (alpha_3, beta_2, gamma_3 of the
// disentangled two-layer transformer; everything else zero) on orthonormal data: its exact
// population loss and gradient, float64. docs/musat2025.md; spec musat2025 sections 7.2-7.3, 11.4.
//
// Parameters theta = (alpha, beta, gamma). Query "last" (q = N) with the strict mask uses the
// numerically stable closed form
//   w = sigmoid(alpha - ln(2N-2)),  p = sigmoid(beta w - ln(2N-1)),  F = 2N-1,
//   L = (1 - gamma p)^2 + gamma^2 (1 - p)^2 / F;
// every other (query, mask) pair uses the O(N)-per-query form: the layer-1 attention column of the
// queried item, the query's layer-2 softmax, L_q = gamma^2 Q^T G1 Q - 2 gamma Q_{2q} + 1, averaged
// over q in {1..N} ("uniform") or q = N ("last"). The loss is the sum over the D output coordinates.
// Hessians by complex-step differentiation of the gradient (objectives/complex_step.h).
#pragma once

#include <memory>
#include <string>

#include "objective.h"
#include "objectives/complex_step.h"

namespace fastattn::induction {

class ThreeParam : public Objective {
 public:
  // N >= 1 pairs; uniform_query: q ~ Unif{1..N} (else q = N); inclusive: causal mask j <= i (else
  // the strict j < i of the paper's proofs).
  ThreeParam(int N, bool uniform_query, bool inclusive);

  std::string name() const override;
  Index size() const override { return 3; }
  double loss_grad(const double* theta, double* grad) const override;
  bool has_hessian() const override { return true; }
  void hessian(const double* theta, double* out) const override;
  std::unique_ptr<HessianOperator> hessian_operator() const override;
  CostHint cost_hint() const override { return {2.5}; }  // one complex gradient evaluation

  int N() const { return N_; }
  bool uniform_query() const { return uniform_; }
  bool inclusive() const { return inclusive_; }
  // The generic per-query form at q (1-based) even where the closed form applies (for tests).
  double loss_grad_query(const double* theta, int q, double* grad) const;

 private:
  int N_;
  bool uniform_, inclusive_;
  // loss and gradient for T = double or std::complex<double> (the complex step)
  template <class T>
  T evaluate(const T* theta, T* grad) const;
  template <class T>
  T closed_form(const T* theta, T* grad) const;
  template <class T>
  T query_form(const T* theta, int q, T* grad) const;
  complex_step::ComplexGradient complex_gradient() const;
};

}  // namespace fastattn::induction
