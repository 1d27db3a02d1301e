// Exact population loss, gradient, Hessian and stage preconditioner of the zero-block linear
// attention models; see linear_attention.h and docs/theory.md.
#include "objectives/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fastattn::linear_attention {

static bool offdiag_small(const Mat& X, double rel) {
  const double scale = X.cwiseAbs().maxCoeff();
  for (Index j = 0; j < X.cols(); ++j)
    for (Index i = 0; i < X.rows(); ++i)
      if (i != j && std::abs(X(i, j)) > rel * scale) return false;
  return true;
}

static void finish_basis(Basis& bs, const Mat& Lam, const Mat& S, double s2, double c) {
  bs.D = int(Lam.rows());
  bs.Lam = Lam;
  bs.A = Lam * S * Lam;
  bs.A = 0.5 * (bs.A + bs.A.transpose());
  const double trSL = (S.cwiseProduct(Lam.transpose())).sum();
  bs.B = bs.A + c * (bs.A + trSL * Lam) + s2 * c * Lam;
  bs.c0 = trSL + s2;
  bs.lam_diag = offdiag_small(Lam, 0.0);
  bs.b_diag = bs.lam_diag && offdiag_small(bs.B, 0.0) && offdiag_small(bs.A, 0.0);
  bs.lam = Lam.diagonal();
  bs.b = bs.B.diagonal();
  bs.a = bs.A.diagonal();
}

Basis make_original(const Mat& Lam, const Mat& S, double s2, double c) {
  Basis bs;
  finish_basis(bs, Lam, S, s2, c);
  bs.E = Mat::Identity(Lam.rows(), Lam.rows());
  return bs;
}

Basis make_eigen(const Mat& Lam, const Mat& S, double s2, double c) {
  const Index D = Lam.rows();
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (Lam + Lam.transpose()));
  Mat E(D, D);
  Vec lam(D);
  for (Index d = 0; d < D; ++d) {  // descending order (conventions.md)
    E.col(d) = es.eigenvectors().col(D - 1 - d);
    lam(d) = es.eigenvalues()(D - 1 - d);
  }
  Mat St = E.transpose() * S * E;
  St = 0.5 * (St + St.transpose());
  // S commuting with Lambda (e.g. S = I) is diagonal here up to rounding: drop the rounding.
  if (offdiag_small(St, 1e-13)) St = Mat(St.diagonal().asDiagonal());
  Basis bs;
  finish_basis(bs, Mat(lam.asDiagonal()), St, s2, c);
  bs.E = E;
  bs.rotated = true;
  return bs;
}

// ---- parameter rotation between the original basis and the eigenbasis (orthogonal, linear) ----
void rotate_params(const Dims& dm, const Mat& E, const double* in, double* out, bool to_eigen) {
  const int D = dm.D, H = dm.H;
  std::copy(in, in + H, out);
  if (dm.fam == MERGED) {
    for (int i = 0; i < H; ++i) {
      CRMap U(in + H + Index(i) * D * D, D, D);
      RMap V(out + H + Index(i) * D * D, D, D);
      if (to_eigen) V.noalias() = E.transpose() * U * E; else V.noalias() = E * U * E.transpose();
    }
  } else {
    const Index HR = Index(H) * dm.R;
    for (int part = 0; part < 2; ++part) {
      CRMap X(in + H + part * HR * D, HR, D);
      RMap Y(out + H + part * HR * D, HR, D);
      if (to_eigen) Y.noalias() = X * E; else Y.noalias() = X * E.transpose();
    }
  }
}

void to_original(const Dims& dm, const Basis& bs, const Vec& y, Vec& out) {
  out.resize(dm.P);
  rotate_params(dm, bs.E, y.data(), out.data(), false);
}

static void compute_gamma(const Dims& dm, const double* th, RMat& Gam, RMat& T) {
  const int D = dm.D, H = dm.H;
  CVMap v(th, H);
  Gam.resize(D, D);
  if (dm.fam == MERGED) {
    CRMap U(th + H, H, Index(D) * D);
    Eigen::Map<Eigen::RowVectorXd>(Gam.data(), Index(D) * D).noalias() = v.transpose() * U;
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
    T.resize(HR, D);
    for (Index j = 0; j < HR; ++j) T.row(j) = v(j / dm.R) * Q.row(j);
    Gam.noalias() = K.transpose() * T;
  }
}

// W = B X Lambda for the basis' structure.
static void apply_BxL(const Basis& bs, const RMat& X, RMat& W) {
  const int D = bs.D;
  W.resize(D, D);
  if (bs.b_diag) {
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) W(i, j) = bs.b(i) * X(i, j) * bs.lam(j);
  } else if (bs.lam_diag) {
    W.noalias() = bs.B * X;
    for (int j = 0; j < D; ++j) W.col(j) *= bs.lam(j);
  } else {
    RMat T = bs.B * X;
    W.noalias() = T * bs.Lam;
  }
}

static double gamma_dot_A(const Basis& bs, const RMat& G) {
  if (bs.b_diag) return G.diagonal().dot(bs.a);
  return G.cwiseProduct(bs.A).sum();
}

// Chain rule: out = dL/dtheta given M = dL/dGamma (linear in M).
static void chain(const Dims& dm, const double* th, const RMat& M, double* out, Work& w) {
  const int D = dm.D, H = dm.H;
  CVMap v(th, H);
  VMap gv(out, H);
  if (dm.fam == MERGED) {
    CRMap U(th + H, H, Index(D) * D);
    Eigen::Map<const Eigen::VectorXd> m(M.data(), Index(D) * D);
    gv.noalias() = U * m;
    RMap gU(out + H, H, Index(D) * D);
    gU.noalias() = v * m.transpose();
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
    w.KM.noalias() = K * M;               // rows: (M^T k)^T ... row j = k_j^T M
    w.QMt.noalias() = Q * M.transpose();  // row j = q_j^T M^T = (M q_j)^T
    RMap gK(out + H, HR, D), gQ(out + H + HR * D, HR, D);
    gv.setZero();
    for (Index j = 0; j < HR; ++j) {
      const double vi = v(j / dm.R);
      gv(j / dm.R) += w.KM.row(j).dot(Q.row(j));
      gK.row(j) = vi * w.QMt.row(j);
      gQ.row(j) = vi * w.KM.row(j);
    }
  }
}

double loss_grad(const Dims& dm, const Basis& bs, const double* th, double* grad, Work& w) {
  compute_gamma(dm, th, w.Gam, w.T);
  apply_BxL(bs, w.Gam, w.W);
  const double loss = bs.c0 - 2.0 * gamma_dot_A(bs, w.Gam) + w.Gam.cwiseProduct(w.W).sum();
  if (grad) {
    w.M = 2.0 * w.W;
    if (bs.b_diag) w.M.diagonal() -= 2.0 * bs.a; else w.M -= 2.0 * bs.A;
    chain(dm, th, w.M, grad, w);
  }
  return loss;
}

void hvp_prepare(const Dims& dm, const Basis& bs, const double* th, Work& w) {
  loss_grad(dm, bs, th, nullptr, w);
  w.M = 2.0 * w.W;
  if (bs.b_diag) w.M.diagonal() -= 2.0 * bs.a; else w.M -= 2.0 * bs.A;
  if (dm.fam != MERGED) {
    const Index HR = Index(dm.H) * dm.R;
    CRMap K(th + dm.H, HR, dm.D), Q(th + dm.H + HR * dm.D, HR, dm.D);
    w.Mq.noalias() = Q * w.M.transpose();  // row j = (M q_j)^T
    w.Mtk.noalias() = K * w.M;             // row j = (M^T k_j)^T
  }
}

void hvp_apply(const Dims& dm, const Basis& bs, const double* th, const double* u, double* out,
               Work& w) {
  const int D = dm.D, H = dm.H;
  CVMap v(th, H), uv(u, H);
  // dGamma = J u
  w.dG.setZero(D, D);
  if (dm.fam == MERGED) {
    CRMap U(th + H, H, Index(D) * D), uU(u + H, H, Index(D) * D);
    Eigen::Map<Eigen::RowVectorXd> g(w.dG.data(), Index(D) * D);
    g.noalias() = uv.transpose() * U + v.transpose() * uU;
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
    CRMap uK(u + H, HR, D), uQ(u + H + HR * D, HR, D);
    w.T1.resize(HR, D);
    w.T2.resize(HR, D);
    for (Index j = 0; j < HR; ++j) {
      const double vi = v(j / dm.R), ui = uv(j / dm.R);
      w.T1.row(j) = ui * Q.row(j) + vi * uQ.row(j);
      w.T2.row(j) = vi * Q.row(j);
    }
    w.dG.noalias() = K.transpose() * w.T1 + uK.transpose() * w.T2;
  }
  apply_BxL(bs, w.dG, w.dM);
  w.dM *= 2.0;
  chain(dm, th, w.dM, out, w);
  // second-order term of Gamma(theta) contracted with M
  if (dm.fam == MERGED) {
    CRMap U(th + H, H, Index(D) * D), uU(u + H, H, Index(D) * D);
    Eigen::Map<const Eigen::VectorXd> m(w.M.data(), Index(D) * D);
    VMap(out, H).noalias() += uU * m;
    RMap(out + H, H, Index(D) * D).noalias() += uv * m.transpose();
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap uK(u + H, HR, D), uQ(u + H + HR * D, HR, D);
    RMap oK(out + H, HR, D), oQ(out + H + HR * D, HR, D);
    w.Muq.noalias() = uQ * w.M.transpose();
    w.Mtuk.noalias() = uK * w.M;
    for (Index j = 0; j < HR; ++j) {
      const int i = int(j / dm.R);
      out[i] += w.Mq.row(j).dot(uK.row(j)) + w.Mtk.row(j).dot(uQ.row(j));
      oK.row(j) += uv(i) * w.Mq.row(j) + v(i) * w.Muq.row(j);
      oQ.row(j) += uv(i) * w.Mtk.row(j) + v(i) * w.Mtuk.row(j);
    }
  }
}

void hvp(const Dims& dm, const Basis& bs, const double* th, const double* u, double* out, Work& w) {
  hvp_prepare(dm, bs, th, w);
  hvp_apply(dm, bs, th, u, out, w);
}

// Diagonal of the Hessian (the second-order term of Gamma(theta) has a zero diagonal: Gamma is
// multilinear in distinct parameter blocks), so diag >= 0: the Gauss-Newton part only.
void hessian_diag(const Dims& dm, const Basis& bs, const double* th, double* out) {
  const int D = dm.D, H = dm.H;
  CVMap v(th, H);
  Vec bdiag = bs.b_diag ? bs.b : Vec(bs.B.diagonal());
  Vec ldiag = bs.lam_diag ? bs.lam : Vec(bs.Lam.diagonal());
  RMat G(D, D), BG;
  if (dm.fam == MERGED) {
    const Index D2 = Index(D) * D;
    for (int i = 0; i < H; ++i) {
      G = CRMap(th + H + i * D2, D, D);
      apply_BxL(bs, G, BG);
      out[i] = 2.0 * G.cwiseProduct(BG).sum();
      RMap o(out + H + i * D2, D, D);
      o = (2.0 * v(i) * v(i)) * (bdiag * ldiag.transpose());
    }
    return;
  }
  const Index HR = Index(H) * dm.R;
  CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
  RMap oK(out + H, HR, D), oQ(out + H + HR * D, HR, D);
  for (int i = 0; i < H; ++i) {
    G.setZero();
    for (int r = 0; r < dm.R; ++r) {
      const Index j = Index(i) * dm.R + r;
      G.noalias() += K.row(j).transpose() * Q.row(j);
    }
    apply_BxL(bs, G, BG);
    out[i] = 2.0 * G.cwiseProduct(BG).sum();
  }
  for (Index j = 0; j < HR; ++j) {
    const double vi2 = v(j / dm.R) * v(j / dm.R);
    const Eigen::RowVectorXd q = Q.row(j), k = K.row(j);
    const double qLq = bs.lam_diag ? q.cwiseAbs2().dot(bs.lam) : double(q * bs.Lam * q.transpose());
    const double kBk = bs.b_diag ? k.cwiseAbs2().dot(bs.b) : double(k * bs.B * k.transpose());
    oK.row(j) = (2.0 * vi2 * qLq) * bdiag.transpose();
    oQ.row(j) = (2.0 * vi2 * kBk) * ldiag.transpose();
  }
}

void hessian(const Dims& dm, const Basis& bs, const double* th, double* out, Work& w) {
  loss_grad(dm, bs, th, nullptr, w);
  w.M = 2.0 * w.W;
  if (bs.b_diag) w.M.diagonal() -= 2.0 * bs.a; else w.M -= 2.0 * bs.A;
  const int D = dm.D, H = dm.H;
  const Index P = dm.P, D2 = Index(D) * D;
  CVMap v(th, H);
  // J: columns vec(dGamma/dtheta_p) (row-major vec); Y = (B (.) Lambda) J
  RMat J = RMat::Zero(D2, P);
  if (dm.fam == MERGED) {
    CRMap U(th + H, H, D2);
    for (int i = 0; i < H; ++i) {
      J.col(i) = U.row(i).transpose();
      for (Index ab = 0; ab < D2; ++ab) J(ab, H + i * D2 + ab) = v(i);
    }
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
    for (Index j = 0; j < HR; ++j) {
      const int i = int(j / dm.R);
      for (int a = 0; a < D; ++a)
        for (int b = 0; b < D; ++b) {
          J(a * D + b, i) += K(j, a) * Q(j, b);
          J(a * D + b, H + j * D + a) = v(i) * Q(j, b);       // d/dk_j[a]: v e_a q^T
          J(a * D + b, H + HR * D + j * D + b) = v(i) * K(j, a);  // d/dq_j[b]: v k e_b^T
        }
    }
  }
  RMat Y(D2, P), X(D, D), Wp;
  for (Index p = 0; p < P; ++p) {
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b) X(a, b) = J(a * D + b, p);
    apply_BxL(bs, X, Wp);
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b) Y(a * D + b, p) = Wp(a, b);
  }
  RMap Hm(out, P, P);
  Hm.noalias() = 2.0 * J.transpose() * Y;
  // second-order term
  if (dm.fam == MERGED) {
    for (int i = 0; i < H; ++i)
      for (Index ab = 0; ab < D2; ++ab) {
        const double m = w.M.data()[ab];
        Hm(i, H + i * D2 + ab) += m;
        Hm(H + i * D2 + ab, i) += m;
      }
  } else {
    const Index HR = Index(H) * dm.R;
    CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
    for (Index j = 0; j < HR; ++j) {
      const int i = int(j / dm.R);
      const Vec Mq = w.M * Q.row(j).transpose();
      const Vec Mtk = w.M.transpose() * K.row(j).transpose();
      for (int a = 0; a < D; ++a) {
        const Index ka = H + j * D + a, qa = H + HR * D + j * D + a;
        Hm(i, ka) += Mq(a); Hm(ka, i) += Mq(a);
        Hm(i, qa) += Mtk(a); Hm(qa, i) += Mtk(a);
        for (int b = 0; b < D; ++b) {
          const Index qb = H + HR * D + j * D + b;
          Hm(ka, qb) += v(i) * w.M(a, b);
          Hm(qb, ka) += v(i) * w.M(a, b);
        }
      }
    }
  }
}

void HeadPreconditioner::prepare(const Dims& dm, const Basis& bs, const double* th, double c) {
  dm_ = &dm;
  P_ = dm.P;
  dginv_.resize(P_);
  if (!bs.b_diag) {
    jacobi_ = true;
    hessian_diag(dm, bs, th, dginv_.data());
    dginv_ = (1.0 + c * dginv_.array()).inverse().matrix();
    return;
  }
  jacobi_ = false;
  const int D = dm.D, H = dm.H;
  CVMap v(th, H);
  ns_ = dm.fam == MERGED ? 2 : 2 * dm.R + 1;
  Kh_.resize(Index(H) * ns_ * ns_);
  Mat C(ns_, ns_), G(ns_, ns_);
  dginv_.head(H).setOnes();
  if (dm.fam == MERGED) {
    const Index D2 = Index(D) * D;
    X_.resize(H, D2);
    CRMap U(th + H, H, D2);
    for (int i = 0; i < H; ++i) {
      VMap dg(dginv_.data() + H + i * D2, D2);
      double uwu = 0, gx = 0;
      for (int a = 0; a < D; ++a)
        for (int b = 0; b < D; ++b) {
          const double w = bs.b(a) * bs.lam(b), x = w * U(i, Index(a) * D + b);
          X_(i, Index(a) * D + b) = x;
          uwu += U(i, Index(a) * D + b) * x;
          dg(Index(a) * D + b) = 1.0 / (1.0 + 2.0 * c * v(i) * v(i) * w);
          gx += x * x * dg(Index(a) * D + b);
        }
      C << uwu, v(i), v(i), 0.0;
      G.setZero();
      G(0, 0) = 1.0;
      G(1, 1) = gx;
      store_k(i, c, C, G);
    }
    return;
  }
  const int R = dm.R;
  const Index HR = Index(H) * R;
  CRMap K(th + H, HR, D), Q(th + H + HR * D, HR, D);
  X_.resize(HR, D);
  Y_.resize(HR, D);
  RMap dk(dginv_.data() + H, HR, D), dq(dginv_.data() + H + HR * D, HR, D);
  for (int i = 0; i < H; ++i) {
    C.setZero();
    G.setZero();
    G(0, 0) = 1.0;
    const double vi = v(i), v2 = vi * vi;
    for (int r = 0; r < R; ++r) {
      const Index j = Index(i) * R + r;
      X_.row(j) = K.row(j).cwiseProduct(bs.b.transpose());
      Y_.row(j) = Q.row(j).cwiseProduct(bs.lam.transpose());
      const double al = Q.row(j).dot(Y_.row(j)), be = K.row(j).dot(X_.row(j));
      dk.row(j) = (1.0 + (2.0 * c * v2 * al) * bs.b.transpose().array()).inverse();
      dq.row(j) = (1.0 + (2.0 * c * v2 * be) * bs.lam.transpose().array()).inverse();
      C(0, 0) += al * be;
      C(0, 1 + r) = C(1 + r, 0) = al * vi;
      C(0, 1 + R + r) = C(1 + R + r, 0) = be * vi;
      C(1 + r, 1 + R + r) = C(1 + R + r, 1 + r) = v2;
      G(1 + r, 1 + r) = X_.row(j).cwiseAbs2().dot(dk.row(j));
      G(1 + R + r, 1 + R + r) = Y_.row(j).cwiseAbs2().dot(dq.row(j));
    }
    store_k(i, c, C, G);
  }
}

void HeadPreconditioner::apply(const Vec& r, Vec& z) const {
  z = dginv_.cwiseProduct(r);
  if (jacobi_) return;
  const Dims& dm = *dm_;
  const int D = dm.D, H = dm.H;
  Vec w(ns_), s(ns_);
  if (dm.fam == MERGED) {
    const Index D2 = Index(D) * D;
    for (int i = 0; i < H; ++i) {
      VMap zi(z.data() + H + i * D2, D2);
      w << z(i), X_.row(i).dot(zi);
      s.noalias() = kmat(i) * w;
      z(i) -= s(0);
      zi -= s(1) * X_.row(i).transpose().cwiseProduct(dginv_.segment(H + i * D2, D2));
    }
    return;
  }
  const int R = dm.R;
  const Index HR = Index(H) * R;
  RMap zk(z.data() + H, HR, D), zq(z.data() + H + HR * D, HR, D);
  Eigen::Map<const RMat> dk(dginv_.data() + H, HR, D), dq(dginv_.data() + H + HR * D, HR, D);
  for (int i = 0; i < H; ++i) {
    w(0) = z(i);
    for (int r = 0; r < R; ++r) {
      const Index j = Index(i) * R + r;
      w(1 + r) = X_.row(j).dot(zk.row(j));
      w(1 + R + r) = Y_.row(j).dot(zq.row(j));
    }
    s.noalias() = kmat(i) * w;
    z(i) -= s(0);
    for (int r = 0; r < R; ++r) {
      const Index j = Index(i) * R + r;
      zk.row(j) -= s(1 + r) * X_.row(j).cwiseProduct(dk.row(j));
      zq.row(j) -= s(1 + R + r) * Y_.row(j).cwiseProduct(dq.row(j));
    }
  }
}

// Woodbury: (A + U (2cC) U^T)^-1 = A^-1 - A^-1 U [(I + 2c C G)^-1 2c C] U^T A^-1
void HeadPreconditioner::store_k(int i, double c, const Mat& C, const Mat& G) {
  Mat M = Mat::Identity(ns_, ns_) + 2.0 * c * C * G;
  Mat Kh = M.partialPivLu().solve(2.0 * c * C);
  std::copy(Kh.data(), Kh.data() + Index(ns_) * ns_, Kh_.data() + Index(i) * ns_ * ns_);
}

}  // namespace fastattn::linear_attention

namespace fastattn {

using namespace linear_attention;

namespace {

// Evaluation scratch space, one per thread (the objective's const methods may run concurrently).
Work& scratch() {
  thread_local Work w;
  return w;
}

class LinearAttentionHvp : public HessianOperator {
 public:
  LinearAttentionHvp(const Dims& dm, const Basis& bs) : dm_(dm), bs_(bs) {}
  void prepare(const double* theta) override {
    theta_ = CVMap(theta, dm_.P);
    hvp_prepare(dm_, bs_, theta_.data(), w_);
  }
  void apply(const double* u, double* out) override { hvp_apply(dm_, bs_, theta_.data(), u, out, w_); }

 private:
  const Dims& dm_;
  const Basis& bs_;
  Vec theta_;
  Work w_;
};

class LinearAttentionPreconditioner : public StagePreconditioner {
 public:
  LinearAttentionPreconditioner(const Dims& dm, const Basis& bs) : dm_(dm), bs_(bs) {}
  void prepare(const double* theta, double c) override { pc_.prepare(dm_, bs_, theta, c); }
  void apply(const Vec& b, Vec& x) const override { pc_.apply(b, x); }

 private:
  const Dims& dm_;
  const Basis& bs_;
  HeadPreconditioner pc_;
};

}  // namespace

LinearAttention::LinearAttention(int family, int D, int H, int R, const Mat& cov, const Mat& w_second,
                                 double noise, double inv_n)
    : dims_(family, D, H, R),
      original_(make_original(cov, w_second, noise, inv_n)),
      eigen_(make_eigen(cov, w_second, noise, inv_n)) {}

std::string LinearAttention::name() const {
  return std::string("linear_attention(") + (dims_.fam == MERGED ? "merged" : "separate") +
         ", D=" + std::to_string(dims_.D) + ", H=" + std::to_string(dims_.H) +
         (dims_.fam == MERGED ? "" : ", R=" + std::to_string(dims_.R)) + ")";
}

double LinearAttention::loss_grad(const double* theta, double* grad) const {
  return linear_attention::loss_grad(dims_, eigen_, theta, grad, scratch());
}

void LinearAttention::hessian(const double* theta, double* out) const {
  linear_attention::hessian(dims_, eigen_, theta, out, scratch());
}

std::unique_ptr<HessianOperator> LinearAttention::hessian_operator() const {
  return std::make_unique<LinearAttentionHvp>(dims_, eigen_);
}

std::unique_ptr<StagePreconditioner> LinearAttention::stage_preconditioner() const {
  return std::make_unique<LinearAttentionPreconditioner>(dims_, eigen_);
}

// Flop model (deterministic, so batch and single runs switch alike): an evaluation ~ the products
// of Gamma, K M and Q M^T; an HVP (with MINRES's vector work) ~ 2x more. Measured ratios:
// docs/theory.md section 4.
CostHint LinearAttention::cost_hint() const {
  const double P = double(dims_.P), D = dims_.D, HR = double(dims_.H) * dims_.R;
  const double dense = eigen_.b_diag ? 0.0 : 2.0 * D * D * D;
  const double eval = (dims_.fam == MERGED ? 4.0 * dims_.H * D * D : 6.0 * HR * D * D) + dense + 3000.0;
  const double hv = (dims_.fam == MERGED ? 12.0 * dims_.H * D * D : 12.0 * HR * D * D) + dense +
                    3000.0 + 20.0 * P;
  return {hv / eval};
}

void LinearAttention::to_working(const double* in, double* out) const {
  rotate_params(dims_, eigen_.E, in, out, true);
}

void LinearAttention::from_working(const double* in, double* out) const {
  rotate_params(dims_, eigen_.E, in, out, false);
}

}  // namespace fastattn
