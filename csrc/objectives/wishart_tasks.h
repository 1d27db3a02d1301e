// Mainali & Teixeira 2025: a one-layer linear transformer f(Z) = Z + W^P (Z Z^T / N) W^Q Z on vector
// in-context regression y = W x, x ~ N(0, U S U^T), tasks W = U diag(lambda) U^T. Exact population
// losses with the full Wishart coupling (the 1/N terms the paper drops); docs/mainali2025.md and
// spec sections 6.2-6.3.
//
// With M = U^T Sigma_hat U (a Wishart/N matrix, E M = S) and B symmetric,
//   E(B) := E[M B M] = (N+1)/N S B S + tr(B S)/N S.
// The task second moment is Omega = E[lambda lambda^T] (I for the task distribution; (1/P) sum over a
// finite task set: the quenched average is exact because the loss is quadratic in lambda).
#pragma once

#include <memory>
#include <string>

#include "eigen_types.h"
#include "objective.h"

namespace fastattn {

// The reduced model (null blocks p1 = q2 = 0 frozen) for general, non-aligned blocks.
// Parameters: the model's flat layout [p1, p2, q1, q2], each d x d row-major (4 d^2). Working basis:
// every block conjugated by U (B -> U^T B U, orthogonal), where P = p2_bar, Q = q1_bar:
//   2L    = tr[(Omega o P^T P) E(Q S Q^T)] - 2 tr[(Omega o P) S Q S] + tr[(I o Omega) S]
//   dL/dP = P (Omega o E(Q S Q^T)) - Omega o (S Q^T S)
//   dL/dQ = E(Omega o P^T P) Q S - S (Omega o P)^T S
// and dL/dp1 = dL/dq2 = 0 (frozen). Cost O(d^3): four GEMMs; in the caller's basis
// (loss_grad_user) eight more change the basis of p2, q1 and their gradients.
// Hessian-vector products differentiate the two
// gradients along (dP, dQ) (E is linear); the dense Hessian applies them to the unit vectors.
class WishartReduced : public Objective {
 public:
  // s [d] > 0: input spectrum; n: context length N; omega [d, d]: task second moment (symmetric);
  // u [d, d]: orthogonal eigenbasis of the input covariance (columns).
  WishartReduced(const Vec& s, double n, const Mat& omega, const Mat& u);

  std::string name() const override;
  Index size() const override { return 4 * d_ * d_; }
  double loss_grad(const double* theta, double* grad) const override;
  double loss_grad_user(const double* theta, double* grad) const override;
  bool has_hessian() const override { return true; }
  void hessian(const double* theta, double* out) const override;
  std::unique_ptr<HessianOperator> hessian_operator() const override;
  void to_working(const double* in, double* out) const override;
  void from_working(const double* in, double* out) const override;

  // H(theta) u into out (working basis).
  void hvp(const double* theta, const double* u, double* out) const;

 private:
  // The loss and, when gpt is not null, the gradient from the working-basis blocks P^T, Q^T [d, d]
  // (column-major) into gpt = (dL/dP)^T, gqt = (dL/dQ)^T.
  double loss_grad_blocks(const double* pt, const double* qt, double* gpt, double* gqt) const;
  // E(B) for symmetric B [d, d].
  Mat wishart(const Mat& b) const;
  void rotate(const double* in, double* out, bool to_working) const;

  Index d_;
  Vec s_;
  double n_;
  Mat omega_, u_, ss_;  // ss_ = s s^T: S B S = ss_ o B
  Vec sqrt_s_;
  Mat w_;         // Omega o s s^T
  double const_;  // tr[(I o Omega) S]
};

// The aligned per-mode form (diagonal P = diag p, Q = diag q; Omega enters through its diagonal w):
//   K_q = sum_g s_g^2 q_g^2,  K_p = sum_b w_b s_b p_b^2
//   2L  = sum_a w_a [p_a^2 ((N+1)/N s_a^3 q_a^2 + s_a K_q/N) - 2 p_a q_a s_a^2 + s_a]
//   dL/dp_a = w_a [p_a ((N+1)/N s_a^3 q_a^2 + s_a K_q/N) - s_a^2 q_a]
//   dL/dq_a = w_a ((N+1)/N s_a^3 p_a^2 q_a - s_a^2 p_a) + s_a^2 q_a K_p/N
// Parameters [p (d), q (d)]. Cost O(d).
class WishartAligned : public Objective {
 public:
  WishartAligned(const Vec& s, double n, const Vec& omega);

  std::string name() const override;
  Index size() const override { return 2 * s_.size(); }
  double loss_grad(const double* theta, double* grad) const override;

 private:
  Vec s_, w_;
  double n_;
};

}  // namespace fastattn
