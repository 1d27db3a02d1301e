// The zero-block linear attention models (merged / cubic_mlp and separate rank-R): exact population
// loss, gradient, Hessian-vector products, dense Hessian and a stage preconditioner, float64, Eigen.
//
// Every model predicts y_q = beta^T Gamma x_q; with Lambda = cov, S = w_second, s2 = noise, c = inv_n:
//   A = Lambda S Lambda,  B = A + c (A + tr(S Lambda) Lambda) + s2 c Lambda
//   L = tr(Lambda S) + s2 - 2 <Gamma, A> + <Gamma, B Gamma Lambda>,  M := dL/dGamma = 2 (B Gamma Lambda - A)
// See docs/theory.md sections 1-3.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "eigen_types.h"
#include "objective.h"

namespace fastattn::linear_attention {

enum Family { MERGED = 0, SEPARATE = 1 };

struct Dims {
  int fam, D, H, R;
  Index P;
  Dims(int fam_, int D_, int H_, int R_) : fam(fam_), D(D_), H(H_), R(fam_ == MERGED ? 1 : R_) {
    if (fam != MERGED && fam != SEPARATE) throw std::invalid_argument("family must be 0 or 1");
    if (D < 1 || H < 1 || R < 1) throw std::invalid_argument("dims must be positive");
    P = fam == MERGED ? Index(H) * (1 + Index(D) * D) : Index(H) * (1 + 2 * Index(R) * D);
  }
};

// Moments expressed in one orthonormal basis (the original one, or the eigenbasis of Lambda).
struct Basis {
  int D = 0;
  Mat Lam, B, A;  // symmetric
  bool lam_diag = false, b_diag = false;  // b_diag implies A diagonal as well
  Vec lam, b, a;
  double c0 = 0;  // tr(Lambda S) + s2
  Mat E;          // columns: eigenvectors (original = E * eigen coordinates); identity for "original"
  bool rotated = false;
};

// Moments in the original basis, and in the eigenbasis of Lambda (descending eigenvalues).
Basis make_original(const Mat& Lam, const Mat& S, double s2, double c);
Basis make_eigen(const Mat& Lam, const Mat& S, double s2, double c);

// Parameter rotation between the original basis and the eigenbasis (orthogonal, linear).
void rotate_params(const Dims& dm, const Mat& E, const double* in, double* out, bool to_eigen);
// Eigenbasis parameters to the original basis, always into an Eigen-allocated (aligned) vector:
// the vectorised small products round differently at other alignments (an ulp), and a recorded
// final state must equal the returned final parameters bit for bit.
void to_original(const Dims& dm, const Basis& bs, const Vec& y, Vec& out);

struct Work {
  RMat Gam, W, M, dG, dM, T, KM, QMt;
  RMat Mq, Mtk, Muq, Mtuk, T1, T2;  // Hessian-vector products
};

// Loss and gradient at th (in the basis of bs). Returns the loss; grad may be null.
double loss_grad(const Dims& dm, const Basis& bs, const double* th, double* grad, Work& w);
// Hessian-vector products at a fixed th: hvp_prepare sets w.M = dL/dGamma (and, separate, the
// cached M q_j, M^T k_j); hvp_apply then costs ~2 gradient evaluations per product.
void hvp_prepare(const Dims& dm, const Basis& bs, const double* th, Work& w);
void hvp_apply(const Dims& dm, const Basis& bs, const double* th, const double* u, double* out,
               Work& w);
// Hessian-vector product H u at th.
void hvp(const Dims& dm, const Basis& bs, const double* th, const double* u, double* out, Work& w);
// Diagonal of the Hessian (>= 0: the second-order term of Gamma(theta) has a zero diagonal).
void hessian_diag(const Dims& dm, const Basis& bs, const double* th, double* out);
// Dense Hessian (P x P, row-major into out).
void hessian(const Dims& dm, const Basis& bs, const double* th, double* out, Work& w);

// Preconditioner for the Rosenbrock stage systems (I + c Hessian) x = b: the exact inverse of
// I + c Hb, Hb the Hessian's Gauss-Newton part restricted to each head's own parameters (for
// separate rank R, each key/query pair as if it were its own head sharing v). The stiff modes of the
// flow are those of heads that have learned a direction, which these blocks hold; Jacobi (their
// diagonal) misses the balanced-rescaling coupling of k, q and v inside one head, whose stage-system
// eigenvalues it spreads over [1/(c diag), 1] (see docs/theory.md).
// In the eigenbasis (B, Lambda diagonal) a head's block is 2 (Delta + U C U^T), Delta diagonal and
// U of rank 2R+1 (separate: e_v, B k_r, Lambda q_r) or 2 (merged: e_v, vec(B U Lambda)); Woodbury
// gives the inverse in O(P) per application. Bases where B or Lambda is not diagonal use Jacobi.
class HeadPreconditioner {
 public:
  void prepare(const Dims& dm, const Basis& bs, const double* th, double c);
  // z = (I + c Hb)^-1 r
  void apply(const Vec& r, Vec& z) const;

 private:
  const Dims* dm_ = nullptr;
  Index P_ = 0;
  int ns_ = 0;
  bool jacobi_ = true;
  Vec dginv_;      // (I + 2 c Delta)^-1
  RMat X_, Y_;     // low-rank directions: B k_r and Lambda q_r (separate); vec(B U_i Lambda) (merged)
  std::vector<double> Kh_;  // per head: (I + 2c C G)^-1 2c C, G = U^T (I + 2c Delta)^-1 U (diagonal)

  void store_k(int i, double c, const Mat& C, const Mat& G);
  Eigen::Map<const Mat> kmat(int i) const { return {Kh_.data() + Index(i) * ns_ * ns_, ns_, ns_}; }
};

}  // namespace fastattn::linear_attention

namespace fastattn {

// The population loss of one zero-block linear attention model on one task (fixed moments) as an
// Objective. Working basis: the eigenbasis of Lambda, where Lambda (and, when S commutes with it,
// A and B) is diagonal and an evaluation costs O(H R D^2). The original basis is kept for the
// bindings' evaluations in the caller's basis.
class LinearAttention : public Objective {
 public:
  // family: linear_attention::MERGED (merged / cubic_mlp) or SEPARATE; cov, w_second [D, D].
  LinearAttention(int family, int D, int H, int R, const Mat& cov, const Mat& w_second, double noise,
                  double inv_n);

  std::string name() const override;
  Index size() const override { return dims_.P; }
  double loss_grad(const double* theta, double* grad) const override;
  bool has_hessian() const override { return true; }
  void hessian(const double* theta, double* out) const override;
  std::unique_ptr<HessianOperator> hessian_operator() const override;
  std::unique_ptr<StagePreconditioner> stage_preconditioner() const override;
  CostHint cost_hint() const override;
  void to_working(const double* in, double* out) const override;
  void from_working(const double* in, double* out) const override;

  const linear_attention::Dims& dims() const { return dims_; }
  const linear_attention::Basis& original() const { return original_; }
  const linear_attention::Basis& eigen() const { return eigen_; }

 private:
  linear_attention::Dims dims_;
  linear_attention::Basis original_, eigen_;
};

}  // namespace fastattn
