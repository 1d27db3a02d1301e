// The 19 pseudo-parameter disentangled transformer of Musat et al. 2025 (Theorem 1's invariant
// subspace) in Gram space: its loss and gradient, float64, D-free. docs/musat2025.md; spec
// musat2025 section 5.5.
//
// theta = (alpha1..3, beta1..12, gamma1..4). Per sequence s (L = 2N + 1 tokens) the data enter
// through three symmetric L x L Gram matrices, G1 = X1 X1^T (content), G2 = X2 X2^T and
// GM = X2 M X2^T (positions), and the target's position tau (the queried label):
//   S = a1 G1 + a2 G2 + a3 GM,  T = masked row softmax of S (strict: row 0 has no key, T = 0),
//   t = T[L-1, :]^T,  h = b1 g1 + b3 g2 + b4 gm + (b7 G1 + b9 G2 + b10 GM) t,
//   k = b2 g1 + b5 g2 + b6 gm + (b8 G1 + b11 G2 + b12 GM) t   (g* = row L-1 of G*),
//   P = h + T k  (row L-1 of U W2 U^T),  Q = masked softmax of P,
//   c = g1 e_{L-1} + g2 t + g3 Q + g4 T^T Q,   loss_s = c^T G1 c - 2 c^T G1[:, tau] + G1[tau, tau].
// The objective is the weighted sum over the S sequences (weights summing to 1): the exact
// population loss for orthonormal data (one sequence per query position), a sample average else.
//
// The Gram matrices are stored sparse (CSR of the entries where any of G1, G2, GM is non-zero), and
// every row of T is kept as a base weight on all its keys plus corrections on the stored entries
// (the keys whose score is not 0). Products with T and T^T are prefix/suffix sums plus the sparse
// corrections, so a sequence costs O(L + nnz): O(L) for orthonormal data, O(L^2) for dense Grams.
// Hessians by complex-step differentiation of the gradient (objectives/complex_step.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "eigen_types.h"
#include "objective.h"
#include "objectives/complex_step.h"

namespace fastattn::induction {

class Gram19 : public Objective {
 public:
  static constexpr int kParams = 19;
  // G1, G2, GM: S matrices L x L each (row-major, concatenated); target: S positions in [0, L);
  // weights: S numbers; inclusive: causal mask j <= i (else strict j < i).
  Gram19(int L, std::vector<double> G1, std::vector<double> G2, std::vector<double> GM,
         std::vector<int> target, std::vector<double> weights, bool inclusive);

  std::string name() const override;
  Index size() const override { return kParams; }
  double loss_grad(const double* theta, double* grad) const override;
  bool has_hessian() const override { return true; }
  void hessian(const double* theta, double* out) const override;
  std::unique_ptr<HessianOperator> hessian_operator() const override;
  CostHint cost_hint() const override { return {2.5}; }  // one complex gradient evaluation

  int L() const { return L_; }
  int n_sequences() const { return int(target_.size()); }
  bool inclusive() const { return inclusive_; }

 private:
  int L_;
  // per sequence s: rows i in [0, L) hold entries ptr_[s][i] .. ptr_[s][i+1] of col_, g1_, g2_, gm_
  std::vector<std::vector<int>> ptr_;
  std::vector<std::vector<int>> col_;
  std::vector<std::vector<double>> g1_, g2_, gm_;
  std::vector<int> target_;
  std::vector<double> weights_;
  bool inclusive_;
  // loss and gradient for T = double or std::complex<double> (the complex step)
  template <class T>
  T evaluate(const T* th, T* grad) const;
  template <class T>
  T sequence(int s, const T* th, T* grad) const;
  complex_step::ComplexGradient complex_gradient() const;
};

}  // namespace fastattn::induction
