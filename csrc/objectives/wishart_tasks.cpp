#include "objectives/wishart_tasks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fastattn {

namespace {

void check_spectrum(const Vec& s, double n) {
  if (s.size() < 1) throw std::invalid_argument("spectrum s must have at least one entry");
  for (Index i = 0; i < s.size(); ++i)
    if (!(s[i] > 0) || !std::isfinite(s[i]))
      throw std::invalid_argument("spectrum s must be positive and finite");
  if (!(n > 0) || !std::isfinite(n)) throw std::invalid_argument("context length N must be positive");
}

}  // namespace

WishartReduced::WishartReduced(const Vec& s, double n, const Mat& omega, const Mat& u)
    : d_(s.size()), s_(s), n_(n), omega_(omega), u_(u) {
  check_spectrum(s, n);
  if (omega.rows() != d_ || omega.cols() != d_ || u.rows() != d_ || u.cols() != d_)
    throw std::invalid_argument("omega and u must be [d, d] with d = len(s)");
  if ((omega - omega.transpose()).cwiseAbs().maxCoeff() > 1e-12 * (1 + omega.cwiseAbs().maxCoeff()))
    throw std::invalid_argument("omega (the task second moment) must be symmetric");
  if ((u.transpose() * u - Mat::Identity(d_, d_)).cwiseAbs().maxCoeff() > 1e-10)
    throw std::invalid_argument("u must be orthogonal (u^T u = I)");
  ss_ = s_ * s_.transpose();
}

std::string WishartReduced::name() const {
  return "wishart_reduced(d=" + std::to_string(d_) + ", N=" + std::to_string(n_) + ")";
}

Mat WishartReduced::wishart(const Mat& b) const {
  const double tr = b.diagonal().dot(s_);
  Mat out = ((n_ + 1) / n_) * ss_.cwiseProduct(b);
  out.diagonal() += (tr / n_) * s_;
  return out;
}

double WishartReduced::loss_grad(const double* theta, double* grad) const {
  // Four d x d products (Q S Q^T, P^T P, P (Omega o K), E(G) Q S); everything else is O(d^2).
  // Column-major copies of the blocks and explicit temporaries keep every product a plain GEMM.
  const Index dd = d_ * d_;
  const Mat P = CRMap(theta + dd, d_, d_), Q = CRMap(theta + 2 * dd, d_, d_);
  const Mat QS = Q * s_.asDiagonal();
  Mat QSQt(d_, d_), PtP(d_, d_);
  QSQt.noalias() = QS * Q.transpose();
  PtP.noalias() = P.transpose() * P;
  const Mat K = wishart(QSQt);                             // E(Q S Q^T)
  const Mat G = omega_.cwiseProduct(PtP);                  // Omega o P^T P
  const Mat OP = omega_.cwiseProduct(P);                   // Omega o P
  const Mat SQS = ss_.cwiseProduct(Q);                     // S Q S
  const double loss = 0.5 * (G.cwiseProduct(K).sum() - 2.0 * OP.cwiseProduct(SQS.transpose()).sum() +
                             omega_.diagonal().dot(s_));
  if (grad != nullptr) {
    std::fill(grad, grad + 4 * dd, 0.0);
    const Mat OK = omega_.cwiseProduct(K);
    const Mat EG = wishart(G);
    Mat gP(d_, d_), gQ(d_, d_);
    gP.noalias() = P * OK;
    gP -= omega_.cwiseProduct(SQS.transpose());
    gQ.noalias() = EG * QS;
    gQ -= ss_.cwiseProduct(OP.transpose());
    RMap(grad + dd, d_, d_) = gP;
    RMap(grad + 2 * dd, d_, d_) = gQ;
  }
  return loss;
}

void WishartReduced::hvp(const double* theta, const double* u, double* out) const {
  const Index dd = d_ * d_;
  const CRMap P(theta + dd, d_, d_), Q(theta + 2 * dd, d_, d_);
  const CRMap dP(u + dd, d_, d_), dQ(u + 2 * dd, d_, d_);
  const Mat QS = Q * s_.asDiagonal(), dQS = dQ * s_.asDiagonal();
  const Mat K = wishart(QS * Q.transpose());
  const Mat dK = wishart(dQS * Q.transpose() + QS * dQ.transpose());
  const Mat G = omega_.cwiseProduct(P.transpose() * P);
  const Mat dG = omega_.cwiseProduct(dP.transpose() * P + P.transpose() * dP);
  std::fill(out, out + 4 * dd, 0.0);
  RMap hP(out + dd, d_, d_), hQ(out + 2 * dd, d_, d_);
  hP = dP * omega_.cwiseProduct(K) + P * omega_.cwiseProduct(dK) -
       omega_.cwiseProduct(ss_.cwiseProduct(dQ).transpose());
  hQ = wishart(dG) * QS + wishart(G) * dQS - ss_.cwiseProduct(omega_.cwiseProduct(dP).transpose());
}

void WishartReduced::hessian(const double* theta, double* out) const {
  const Index n = size();
  Vec e = Vec::Zero(n), col(n);
  for (Index j = 0; j < n; ++j) {
    e[j] = 1.0;
    hvp(theta, e.data(), col.data());
    e[j] = 0.0;
    for (Index i = 0; i < n; ++i) out[i * n + j] = col[i];
  }
}

namespace {

class ReducedHvp : public HessianOperator {
 public:
  explicit ReducedHvp(const WishartReduced& obj) : obj_(obj), theta_(obj.size()) {}
  void prepare(const double* theta) override { std::copy(theta, theta + theta_.size(), theta_.data()); }
  void apply(const double* u, double* out) override { obj_.hvp(theta_.data(), u, out); }

 private:
  const WishartReduced& obj_;
  Vec theta_;
};

}  // namespace

std::unique_ptr<HessianOperator> WishartReduced::hessian_operator() const {
  return std::make_unique<ReducedHvp>(*this);
}

void WishartReduced::rotate(const double* in, double* out, bool to_working) const {
  const Index dd = d_ * d_;
  Mat x(d_, d_), tmp(d_, d_), y(d_, d_);
  for (int b = 0; b < 4; ++b) {
    x = CRMap(in + b * dd, d_, d_);
    if (to_working) {
      tmp.noalias() = u_.transpose() * x;
      y.noalias() = tmp * u_;
    } else {
      tmp.noalias() = u_ * x;
      y.noalias() = tmp * u_.transpose();
    }
    RMap(out + b * dd, d_, d_) = y;
  }
}

void WishartReduced::to_working(const double* in, double* out) const { rotate(in, out, true); }
void WishartReduced::from_working(const double* in, double* out) const { rotate(in, out, false); }

WishartAligned::WishartAligned(const Vec& s, double n, const Vec& omega) : s_(s), w_(omega), n_(n) {
  check_spectrum(s, n);
  if (omega.size() != s.size()) throw std::invalid_argument("omega must have one entry per mode (len(s))");
}

std::string WishartAligned::name() const {
  return "wishart_aligned(d=" + std::to_string(s_.size()) + ", N=" + std::to_string(n_) + ")";
}

double WishartAligned::loss_grad(const double* theta, double* grad) const {
  const Index d = s_.size();
  const CVMap p(theta, d), q(theta + d, d);
  const double c = (n_ + 1) / n_;
  const Vec s2 = s_.cwiseProduct(s_), s3 = s2.cwiseProduct(s_);
  const double kq = s2.dot(q.cwiseProduct(q));
  const double kp = w_.cwiseProduct(s_).dot(p.cwiseProduct(p));
  const Vec coup = c * s3.cwiseProduct(q.cwiseProduct(q)) + (kq / n_) * s_;  // per-mode curvature of p
  const double loss =
      0.5 * w_.dot(p.cwiseProduct(p).cwiseProduct(coup) - 2.0 * p.cwiseProduct(q).cwiseProduct(s2) + s_);
  if (grad != nullptr) {
    VMap gp(grad, d), gq(grad + d, d);
    gp = w_.cwiseProduct(p.cwiseProduct(coup) - s2.cwiseProduct(q));
    gq = w_.cwiseProduct(c * s3.cwiseProduct(p.cwiseProduct(p)).cwiseProduct(q) - s2.cwiseProduct(p)) +
         (kp / n_) * s2.cwiseProduct(q);
  }
  return loss;
}

}  // namespace fastattn
