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
  sqrt_s_ = s_.cwiseSqrt();
  w_ = omega_.cwiseProduct(ss_);
  const_ = omega_.diagonal().dot(s_);
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

namespace {

// loss_grad's scratch space, one per thread (the const methods may run concurrently); reused across
// calls so that an evaluation allocates nothing (d = 256: each d x d temporary is 512 KB, above
// malloc's mmap threshold, and its page faults cost as much as a GEMM).
struct ReducedWork {
  Mat rt, k, g;  // S^(1/2) Q^T; Q S Q^T then Omega o E(Q S Q^T); P^T P then E(Omega o P^T P)
  Mat tmp, pq, gpq;  // the caller's-basis evaluation: [d, 2d] a product, [P^T | Q^T], their gradients
};

ReducedWork& reduced_work(Index d) {
  thread_local ReducedWork w;
  for (Mat* m : {&w.rt, &w.k, &w.g}) m->resize(d, d);
  return w;
}

}  // namespace

double WishartReduced::loss_grad(const double* theta, double* grad) const {
  const Index dd = d_ * d_;
  if (grad != nullptr) {
    std::fill(grad, grad + dd, 0.0);
    std::fill(grad + 3 * dd, grad + 4 * dd, 0.0);
  }
  return loss_grad_blocks(theta + dd, theta + 2 * dd, grad == nullptr ? nullptr : grad + dd,
                          grad == nullptr ? nullptr : grad + 2 * dd);
}

double WishartReduced::loss_grad_user(const double* theta, double* grad) const {
  // Only p2 and q1 enter the loss and only their gradients are nonzero, so only they change basis
  // (B -> U^T B U in, U B U^T out). As column-major maps the row-major blocks are transposes, and
  // (U^T B U)^T = U^T B^T U: the same products apply. p2 and q1 are adjacent, [p2^T | q1^T] one
  // d x 2d matrix, so each change of basis is one d x d x 2d product and two d x d x d ones.
  const Index d = d_, dd = d_ * d_;
  using CMap = Eigen::Map<const Mat>;
  using MMap = Eigen::Map<Mat>;
  ReducedWork& w = reduced_work(d);
  w.tmp.resize(d, 2 * d);
  w.pq.resize(d, 2 * d);
  w.gpq.resize(d, 2 * d);
  w.tmp.noalias() = u_.transpose() * CMap(theta + dd, d, 2 * d);
  w.pq.leftCols(d).noalias() = w.tmp.leftCols(d) * u_;
  w.pq.rightCols(d).noalias() = w.tmp.rightCols(d) * u_;
  const double* pt = w.pq.data();
  const double* qt = pt + dd;
  if (grad == nullptr) return loss_grad_blocks(pt, qt, nullptr, nullptr);
  const double loss = loss_grad_blocks(pt, qt, w.gpq.data(), w.gpq.data() + dd);
  std::fill(grad, grad + dd, 0.0);
  std::fill(grad + 3 * dd, grad + 4 * dd, 0.0);
  w.tmp.noalias() = u_ * w.gpq;
  MMap(grad + dd, d, d).noalias() = w.tmp.leftCols(d) * u_.transpose();
  MMap(grad + 2 * dd, d, d).noalias() = w.tmp.rightCols(d) * u_.transpose();
  return loss;
}

double WishartReduced::loss_grad_blocks(const double* pt, const double* qt, double* gpt,
                                        double* gqt) const {
  // Four GEMMs (Q S Q^T and P^T P as full products: Eigen's symmetric rank update, half the flops,
  // took as long at d = 256; P (Omega o K) and E(G) Q S, gradient only); the O(d^2) rest runs in
  // three fused passes. The blocks are the
  // working-basis P^T, Q^T and gradients (dL/dP)^T, (dL/dQ)^T, column-major (the row-major
  // blocks of the flat layout read in place).
  const Index d = d_;
  using CMap = Eigen::Map<const Mat>;
  using MMap = Eigen::Map<Mat>;
  const CMap Pt(pt, d, d), Qt(qt, d, d);
  ReducedWork& w = reduced_work(d);
  w.rt = sqrt_s_.asDiagonal() * Qt;
  w.k.noalias() = w.rt.transpose() * w.rt;  // Q S Q^T
  w.g.noalias() = Pt * Pt.transpose();      // P^T P
  // Lower triangles -> symmetric Omega o E(Q S Q^T) and E(Omega o P^T P) in place, with tr[G K].
  const double c = (n_ + 1) / n_;
  const double trk = w.k.diagonal().dot(s_) / n_;
  const double trg = w.g.diagonal().cwiseProduct(omega_.diagonal()).dot(s_) / n_;
  double gk = 0.0;
  for (Index j = 0; j < d; ++j) {
    for (Index i = j; i < d; ++i) {
      const double kij = c * ss_(i, j) * w.k(i, j) + (i == j ? trk * s_[i] : 0.0);
      const double gij = omega_(i, j) * w.g(i, j);
      gk += (i == j ? 1.0 : 2.0) * gij * kij;
      w.k(i, j) = w.k(j, i) = omega_(i, j) * kij;
      w.g(i, j) = w.g(j, i) = c * ss_(i, j) * gij + (i == j ? trg * s_[i] : 0.0);
    }
  }
  // The linear term: 2 tr[(Omega o P) S Q S] = 2 sum_ij W_ij P_ij Q_ji, W = Omega o s s^T.
  double lin = 0.0;
  if (gpt == nullptr) {
    for (Index j = 0; j < d; ++j)
      for (Index i = 0; i < d; ++i) lin += w_(i, j) * Pt(j, i) * Qt(i, j);
    return 0.5 * (gk - 2.0 * lin + const_);
  }
  MMap gPt(gpt, d, d), gQt(gqt, d, d);
  gPt.noalias() = w.k * Pt;  // (P (Omega o K))^T
  gQt.noalias() = Qt * w.g;  // (E(G) Q)^T, scaled by S below
  // dL/dP = P (Omega o K) - W o Q^T and dL/dQ = E(G) Q S - W o P^T, transposed (W is symmetric).
  for (Index j = 0; j < d; ++j) {
    for (Index i = 0; i < d; ++i) {
      const double wq = w_(i, j) * Qt(j, i), wp = w_(i, j) * Pt(j, i);
      lin += wq * Pt(i, j);
      gPt(i, j) -= wq;
      gQt(i, j) = s_[i] * gQt(i, j) - wp;
    }
  }
  return 0.5 * (gk - 2.0 * lin + const_);
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
