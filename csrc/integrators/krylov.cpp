// Rodas4's stage systems (I + c H) x = b without a dense Hessian: MINRES on Hessian-vector products,
// seeded by the step's earlier stage solutions.
#include "integrators/runner.h"

#include <algorithm>
#include <cmath>

namespace fastattn {

// The Hessian operator and the stage preconditioner, made once per run (capabilities were checked
// before the run).
void Runner::krylov_setup() {
  if (hop_) return;
  hop_ = obj_.hessian_operator();
  prec_ = obj_.stage_preconditioner();
}

// Preconditioned MINRES (Paige & Saunders; residual vector by its recurrence) for
// (I + c H) x = b, H the Hessian operator prepared at y (symmetric, possibly indefinite near
// saddles), x0 = 0, preconditioned by the objective's stage preconditioner (SPD, prepared at y for
// this c; none: the identity). Stops when
// err_norm(residual) <= kKrylovTol (the step controller's weighted norm). False if not converged.
bool Runner::minres(const Vec& y, double c, const Vec& b, Vec& x) {
  x.setZero(P_);
  if (prec_ && c != prec_c_) { prec_->prepare(y.data(), c); prec_c_ = c; }
  auto precondition = [&](const Vec& r, Vec& z) { if (prec_) prec_->apply(r, z); else z = r; };
  const double ktol2 = kKrylovTol * kKrylovTol * double(P_);
  mr_r1_ = b; mr_r2_ = b; mr_res_ = b;
  if (b.cwiseProduct(mr_wt_).squaredNorm() <= ktol2) return true;
  precondition(b, mr_y_);
  const double beta1 = std::sqrt(b.dot(mr_y_));
  if (!(beta1 > 0)) return std::isfinite(beta1);
  mr_w_.setZero(P_); mr_w1_.setZero(P_); mr_w2_.setZero(P_);
  mr_v_.resize(P_);
  double oldb = 0, beta = beta1, dbar = 0, epsln = 0, phibar = beta1, cs = -1, sn = 0;
  for (int k = 1; k <= kKrylovMaxIt; ++k) {
    mr_v_ = mr_y_ / beta;
    hop_->apply(mr_v_.data(), mr_y_.data());
    ++res_.n_hvp;
    mr_y_ = mr_v_ + c * mr_y_;
    if (k >= 2) mr_y_ -= (beta / oldb) * mr_r1_;
    const double alfa = mr_v_.dot(mr_y_);
    mr_y_ -= (alfa / beta) * mr_r2_;
    mr_r1_.swap(mr_r2_);
    mr_r2_ = mr_y_;
    precondition(mr_r2_, mr_y_);
    oldb = beta;
    beta = std::sqrt(std::max(0.0, mr_r2_.dot(mr_y_)));
    const double oldeps = epsln, delta = cs * dbar + sn * alfa, gbar = sn * dbar - cs * alfa;
    epsln = sn * beta;
    dbar = -cs * beta;
    const double gamma = std::max(std::hypot(gbar, beta), 1e-300);
    cs = gbar / gamma;
    sn = beta / gamma;
    const double phi = cs * phibar;
    phibar = sn * phibar;
    mr_w1_.swap(mr_w2_);
    mr_w2_.swap(mr_w_);
    mr_w_ = (mr_v_ - oldeps * mr_w1_ - delta * mr_w2_) / gamma;
    x += phi * mr_w_;
    if (!std::isfinite(phibar) || !std::isfinite(alfa)) return false;
    if (beta > 0) mr_res_ = (sn * sn) * mr_res_ - (phibar * cs / beta) * mr_r2_;
    if (beta == 0 || mr_res_.cwiseProduct(mr_wt_).squaredNorm() <= ktol2) return x.allFinite();
  }
  return false;
}

// (I + c H) x = b for one stage of a Rosenbrock step: start from the combination of the step's
// earlier stage solutions whose images best fit b (least squares in the controller's weighted
// norm; the stage right-hand sides are close to collinear), then MINRES on what is left.
bool Runner::stage_solve(const Vec& y, double c, const Vec& b, Vec& x) {
  const int m = int(st_x_.size());
  Vec r = b;
  x.setZero(P_);
  if (m > 0) {
    Mat G(m, m);
    Vec g(m);
    for (int j = 0; j < m; ++j) {
      const Vec wj = st_ax_[j].cwiseProduct(mr_wt_).cwiseProduct(mr_wt_);
      g(j) = wj.dot(b);
      for (int k = 0; k <= j; ++k) G(j, k) = G(k, j) = wj.dot(st_ax_[k]);
    }
    const Vec alpha = G.completeOrthogonalDecomposition().solve(g);
    for (int j = 0; j < m; ++j) {
      x += alpha(j) * st_x_[j];
      r -= alpha(j) * st_ax_[j];
    }
  }
  Vec dx;
  if (!minres(y, c, r, dx)) return false;
  x += dx;
  st_x_.push_back(x);
  st_ax_.push_back(b - mr_res_);
  return x.allFinite();
}

}  // namespace fastattn
