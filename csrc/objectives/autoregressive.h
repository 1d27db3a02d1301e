// Sander et al. 2024 (in-context autoregressive learning): the exact population loss of the diagonal
// multi-head linear attention with a positional matrix P (Eq. 6, Assumptions 1 and 3) on commuting
// unitary or commuting orthogonal (rotation) contexts, with its gradient. docs/sander2024.md.
//
// With C = B^T A (Lemma 2) and p = row T-1 of P (1-based; 0-based row T-2, columns 0..T-1), the loss
// is l = sum_{T=2}^{Tmax} l(C, p_T-row), where (pi(i) = i ^ 1 the conjugate partner, c_i = C_{i,pi(i)},
// R = C 1, Q = sum_{t != T-1} p_t, Q2 = sum_{t != T-1} p_t^2):
//   unitary      l_U = p_{T-1}^2 |C1|^2 + Q2 |C|_F^2 - 2 p_T tr C + d             (corrected Prop. 4)
//   paper        l_U + p_{T-1}^2 |C|_F^2                                          (Prop. 4 as printed)
//   orthogonal   l_O = l_U + 2 p_{T-1} Q sum_i R_i c_i + (Q^2 - Q2) sum_i c_i^2   (d even)
// evaluated as the sums of squares they are (autoregressive.cpp, row_loss_t): never below 0, and
// exact to rounding relative to the loss itself, also at a zero-loss optimum.
// Parameters (flat, row-major): factored: A [H, d], B [H, d], P [Tmax, Tmax]; merged: C [d, d], P.
// Entries of P that no T reads (row Tmax-1, columns beyond r+1 of row r) have zero gradient.
#pragma once

#include <memory>
#include <string>

#include "eigen_types.h"
#include "objective.h"

namespace fastattn::autoregressive {

enum Context { UNITARY = 0, ORTHOGONAL = 1, UNITARY_PAPER = 2 };

struct Dims {
  int context, d, H, tmax;
  bool factored;  // (A, B, P) if true, (C, P) otherwise
  Index P;
  Dims(int context_, int d_, int H_, int tmax_, bool factored_);
};

// The loss (and, if grad is not null, its gradient [P]) at theta [P].
double loss_grad(const Dims& dm, const double* theta, double* grad);
// Hessian-vector products by the complex step on the gradient (exact to rounding: the loss is a
// polynomial, evaluated without conjugation), with their own workspace.
std::unique_ptr<HessianOperator> hessian_operator(const Dims& dm);

}  // namespace fastattn::autoregressive

namespace fastattn {

class AutoRegressive : public Objective {
 public:
  AutoRegressive(int context, int d, int H, int tmax, bool factored) : dm_(context, d, H, tmax, factored) {}
  std::string name() const override;
  Index size() const override { return dm_.P; }
  double loss_grad(const double* theta, double* grad) const override {
    return autoregressive::loss_grad(dm_, theta, grad);
  }
  bool has_hessian() const override { return true; }
  // Dense Hessian [P, P]: P Hessian-vector products (P = 2Hd + tmax^2; for tests and small runs).
  void hessian(const double* theta, double* out) const override;
  std::unique_ptr<HessianOperator> hessian_operator() const override {
    return autoregressive::hessian_operator(dm_);
  }
  // An HVP is one complex gradient evaluation: about 4 real ones.
  CostHint cost_hint() const override { return {4.0}; }
  const autoregressive::Dims& dims() const { return dm_; }

 private:
  autoregressive::Dims dm_;
};

}  // namespace fastattn
