// Exact population loss, gradient, Hessian and gradient-flow integrators of the zero-block linear
// attention models (merged / cubic_mlp and separate rank-R), float64, Eigen. See docs/theory.md.
//
// Every model predicts y_q = beta^T Gamma x_q; with Lambda = cov, S = w_second, s2 = noise, c = inv_n:
//   A = Lambda S Lambda,  B = A + c (A + tr(S Lambda) Lambda) + s2 c Lambda
//   L = tr(Lambda S) + s2 - 2 <Gamma, A> + <Gamma, B Gamma Lambda>,  M := dL/dGamma = 2 (B Gamma Lambda - A)
// The flow is d theta/dt = -1/2 dL/dtheta. Integrators work in the eigenbasis of Lambda, where Lambda is
// diagonal and (when S commutes with Lambda) B and A are diagonal too.
#include <Eigen/Dense>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "stabilized_tables.h"

namespace py = pybind11;

namespace {

using Index = Eigen::Index;
using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RMap = Eigen::Map<RMat>;
using CRMap = Eigen::Map<const RMat>;
using VMap = Eigen::Map<Vec>;
using CVMap = Eigen::Map<const Vec>;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

bool offdiag_small(const Mat& X, double rel) {
  const double scale = X.cwiseAbs().maxCoeff();
  for (Index j = 0; j < X.cols(); ++j)
    for (Index i = 0; i < X.rows(); ++i)
      if (i != j && std::abs(X(i, j)) > rel * scale) return false;
  return true;
}

void finish_basis(Basis& bs, const Mat& Lam, const Mat& S, double s2, double c) {
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

// Eigenbasis parameters to the original basis, always into an Eigen-allocated (aligned) vector:
// the vectorised small products round differently at other alignments (an ulp), and a recorded
// final state must equal the returned final parameters bit for bit.
void to_original(const Dims& dm, const Basis& bs, const Vec& y, Vec& out) {
  out.resize(dm.P);
  rotate_params(dm, bs.E, y.data(), out.data(), false);
}

struct Work {
  RMat Gam, W, M, dG, dM, T, KM, QMt;
  RMat Mq, Mtk, Muq, Mtuk, T1, T2;  // Hessian-vector products
};

void compute_gamma(const Dims& dm, const double* th, RMat& Gam, RMat& T) {
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
void apply_BxL(const Basis& bs, const RMat& X, RMat& W) {
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

double gamma_dot_A(const Basis& bs, const RMat& G) {
  if (bs.b_diag) return G.diagonal().dot(bs.a);
  return G.cwiseProduct(bs.A).sum();
}

// Chain rule: out = dL/dtheta given M = dL/dGamma (linear in M).
void chain(const Dims& dm, const double* th, const RMat& M, double* out, Work& w) {
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

// Loss and gradient at th (in the basis of bs). Returns the loss; grad may be null.
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

// Hessian-vector products at a fixed th: hvp_prepare sets w.M = dL/dGamma (and, separate, the
// cached M q_j, M^T k_j); hvp_apply then costs ~2 gradient evaluations per product.
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

// Hessian-vector product H u at th.
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

// Dense Hessian (P x P, row-major into out).
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
  void prepare(const Dims& dm, const Basis& bs, const double* th, double c) {
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

  // z = (I + c Hb)^-1 r
  void apply(const Vec& r, Vec& z) const {
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

 private:
  const Dims* dm_ = nullptr;
  Index P_ = 0;
  int ns_ = 0;
  bool jacobi_ = true;
  Vec dginv_;      // (I + 2 c Delta)^-1
  RMat X_, Y_;     // low-rank directions: B k_r and Lambda q_r (separate); vec(B U_i Lambda) (merged)
  std::vector<double> Kh_;  // per head: (I + 2c C G)^-1 2c C, G = U^T (I + 2c Delta)^-1 U (diagonal)

  // Woodbury: (A + U (2cC) U^T)^-1 = A^-1 - A^-1 U [(I + 2c C G)^-1 2c C] U^T A^-1
  void store_k(int i, double c, const Mat& C, const Mat& G) {
    Mat M = Mat::Identity(ns_, ns_) + 2.0 * c * C * G;
    Mat Kh = M.partialPivLu().solve(2.0 * c * C);
    std::copy(Kh.data(), Kh.data() + Index(ns_) * ns_, Kh_.data() + Index(i) * ns_ * ns_);
  }
  Eigen::Map<const Mat> kmat(int i) const { return {Kh_.data() + Index(i) * ns_ * ns_, ns_, ns_}; }
};

// ------------------------------------------ batching helpers ------------------------------------
struct MomentSet {
  std::vector<Mat> cov, ws;
  std::vector<double> noise, inv_n;
  Index count() const { return Index(cov.size()); }
};

MomentSet read_moments(const Arr& cov, const Arr& ws, const Arr& noise, const Arr& inv_n, int D) {
  MomentSet m;
  if (cov.ndim() != 3 || ws.ndim() != 3 || cov.shape(1) != D || cov.shape(2) != D ||
      ws.shape(0) != cov.shape(0) || ws.shape(1) != D || ws.shape(2) != D)
    throw std::invalid_argument("moments: cov and w_second must be [Km, D, D]");
  const Index Km = cov.shape(0);
  if (noise.size() != Km || inv_n.size() != Km)
    throw std::invalid_argument("moments: noise and inv_n must have Km entries");
  for (Index k = 0; k < Km; ++k) {
    m.cov.push_back(CRMap(cov.data() + k * D * D, D, D));
    m.ws.push_back(CRMap(ws.data() + k * D * D, D, D));
    m.noise.push_back(noise.data()[k]);
    m.inv_n.push_back(inv_n.data()[k]);
  }
  return m;
}

std::pair<Index, Index> read_params(const Arr& params, const Dims& dm) {
  Index K;
  if (params.ndim() == 1) K = 1;
  else if (params.ndim() == 2) K = params.shape(0);
  else throw std::invalid_argument("params must be [P] or [K, P]");
  if (params.shape(params.ndim() - 1) != dm.P) throw std::invalid_argument("params: wrong length P");
  return {K, dm.P};
}

py::tuple py_loss_grad(int fam, int D, int H, int R, const Arr& params, const Arr& cov,
                       const Arr& ws, const Arr& noise, const Arr& inv_n) {
  Dims dm(fam, D, H, R);
  auto [K, P] = read_params(params, dm);
  MomentSet ms = read_moments(cov, ws, noise, inv_n, D);
  if (ms.count() != 1 && ms.count() != K) throw std::invalid_argument("moments: need 1 or K sets");
  Arr loss(std::vector<py::ssize_t>{py::ssize_t(K)});
  Arr grad(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
  const double* th = params.data();
  double* lo = loss.mutable_data();
  double* g = grad.mutable_data();
  {
    py::gil_scoped_release nogil;
    std::vector<Basis> bases;
    for (Index m = 0; m < ms.count(); ++m)
      bases.push_back(make_original(ms.cov[m], ms.ws[m], ms.noise[m], ms.inv_n[m]));
    Work w;
    for (Index k = 0; k < K; ++k)
      lo[k] = loss_grad(dm, bases[ms.count() == 1 ? 0 : k], th + k * P, g + k * P, w);
  }
  return py::make_tuple(loss, grad);
}

// Prepared evaluator: moments fixed, both bases precomputed.
class Evaluator {
 public:
  Evaluator(int fam, int D, int H, int R, const Arr& cov, const Arr& ws, double noise, double inv_n)
      : dm_(fam, D, H, R) {
    if (cov.ndim() != 2 || cov.shape(0) != D || cov.shape(1) != D || ws.ndim() != 2 ||
        ws.shape(0) != D || ws.shape(1) != D)
      throw std::invalid_argument("moments: cov and w_second must be [D, D]");
    Mat L = CRMap(cov.data(), D, D), S = CRMap(ws.data(), D, D);
    orig_ = make_original(L, S, noise, inv_n);
    eig_ = make_eigen(L, S, noise, inv_n);
  }
  Index P() const { return dm_.P; }
  bool eig_diagonal() const { return eig_.b_diag; }
  Arr eigvecs() const {
    Arr out(std::vector<py::ssize_t>{dm_.D, dm_.D});
    RMap(out.mutable_data(), dm_.D, dm_.D) = eig_.E;
    return out;
  }
  py::tuple lg(const Arr& params, bool eigen) const {
    auto [K, P] = read_params(params, dm_);
    Arr loss(std::vector<py::ssize_t>{py::ssize_t(K)});
    Arr grad(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
    const double* th = params.data();
    double* lo = loss.mutable_data();
    double* g = grad.mutable_data();
    {
      py::gil_scoped_release nogil;
      Work w;
      const Basis& bs = eigen ? eig_ : orig_;
      for (Index k = 0; k < K; ++k) lo[k] = loss_grad(dm_, bs, th + k * P, g + k * P, w);
    }
    if (params.ndim() == 1) return py::make_tuple(lo[0], grad.reshape({P}));
    return py::make_tuple(loss, grad);
  }
  Arr hess(const Arr& params) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1) throw std::invalid_argument("params must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P), py::ssize_t(P)});
    double* o = out.mutable_data();
    const double* th = params.data();
    {
      py::gil_scoped_release nogil;
      Work w;
      hessian(dm_, orig_, th, o, w);
    }
    return out;
  }
  Arr hdiag(const Arr& params) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1) throw std::invalid_argument("params must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    hessian_diag(dm_, orig_, params.data(), out.mutable_data());
    return out;
  }
  Arr hv(const Arr& params, const Arr& u) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1 || u.ndim() != 1 || u.shape(0) != P)
      throw std::invalid_argument("params and u must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    double* o = out.mutable_data();
    const double *th = params.data(), *uu = u.data();
    {
      py::gil_scoped_release nogil;
      Work w;
      hvp(dm_, orig_, th, uu, o, w);
    }
    return out;
  }
  Arr precond(const Arr& params, double c, const Arr& r) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1 || r.ndim() != 1 || r.shape(0) != P)
      throw std::invalid_argument("params and r must be [P]");
    HeadPreconditioner pc;
    pc.prepare(dm_, orig_, params.data(), c);
    Vec z;
    pc.apply(CVMap(r.data(), P), z);
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    std::copy(z.data(), z.data() + P, out.mutable_data());
    return out;
  }
  Arr rot(const Arr& params, bool to_eigen) const {
    auto [K, P] = read_params(params, dm_);
    Arr out(std::vector<py::ssize_t>(params.shape(), params.shape() + params.ndim()));
    for (Index k = 0; k < K; ++k)
      rotate_params(dm_, eig_.E, params.data() + k * P, out.mutable_data() + k * P, to_eigen);
    return out;
  }

 private:
  Dims dm_;
  Basis orig_, eig_;
};

// ------------------------------------------ integrators -----------------------------------------
enum Method { EULER = 0, RK4 = 1, RK45 = 2, STIFF = 3, ODE23S = 4, AUTO = 5, STIFF_KRYLOV = 6,
              STABILIZED = 7,
              // run_adaptive's Dormand-Prince phase of "auto" above P = 2000 (see run_auto_large)
              RK45_PHASE = 100 };

// Largest P for which "auto" uses the dense-Hessian Rosenbrock method (LU cost ~P^3); above it,
// the Hessian-free one (stage systems by MINRES on Hessian-vector products).
constexpr Index kAutoMaxDenseP = 2000;
// MINRES: stop when the weighted RMS norm (the step controller's) of the residual is below this
// fraction of the error tolerance; at most kKrylovMaxIt iterations (else the step is rejected).
constexpr double kKrylovTol = 1e-2;
constexpr int kKrylovMaxIt = 1000;
// "stabilized": the stage count is the smallest with ell_s >= kStabMargin * h * rho(J)
constexpr double kStabMargin = 1.2;
constexpr int kStabHandOverS = 30;

struct Opts {
  int method;
  double t_end, lr, dt, rtol, atol, h0, target_loss, grad_tol, max_seconds;
  long long max_evals, max_steps;
  bool record_params;
};

struct Interrupt {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(),
                                        last = start;
  bool hit = false;
  bool poll() {
    if (hit) return true;
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() < 0.2) return false;
    last = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      hit = true;
    }
    return hit;
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

struct Result {
  std::string status = "running";
  long long n_evals = 0, n_steps = 0, n_jac = 0, n_rejected = 0, n_hvp = 0;
  double t_final = 0;
};

bool all_finite(const Vec& x) { return x.allFinite(); }

// Work per unit time over the last n accepted steps ("auto" compares its methods by it).
class WorkRate {
 public:
  WorkRate(size_t n, double work, double t) : n_(n), marks_{{work, t}} {}
  void add(double work, double t) {
    marks_.emplace_back(work, t);
    if (marks_.size() > n_ + 1) marks_.pop_front();
  }
  double rate() const {
    return (marks_.back().first - marks_.front().first) / (marks_.back().second - marks_.front().second);
  }

 private:
  size_t n_;
  std::deque<std::pair<double, double>> marks_;  // (work done, t)
};

class Runner {
 public:
  Runner(const Dims& dm, const Basis& bs, const Opts& o, const std::vector<double>& rec,
         double* rec_loss, double* rec_params, Interrupt& intr)
      : dm_(dm), bs_(bs), o_(o), rec_(rec), rec_loss_(rec_loss), rec_params_(rec_params),
        intr_(intr) {}

  // y: eigenbasis parameters in, final eigenbasis parameters out.
  Result run(Vec& y) {
    res_ = Result();
    rho_u_.resize(0);
    t_start_ = intr_.elapsed();
    P_ = dm_.P;
    f0_.resize(P_);
    L0_ = eval(y, f0_);
    if (!std::isfinite(L0_) || !all_finite(f0_) || !all_finite(y)) {
      res_.status = "diverged";
      return res_;
    }
    next_rec_ = 0;
    switch (o_.method) {
      case EULER: run_euler(y); break;
      case RK4: run_fixed_rk4(y); break;
      case RK45: run_adaptive(y, RK45); break;
      case ODE23S: run_ode23s(y); break;
      case STIFF: run_adaptive(y, STIFF); break;
      case STIFF_KRYLOV: run_adaptive(y, STIFF, true); break;
      case STABILIZED: run_stabilized(y, false); break;
      default:
        if (dm_.P > kAutoMaxDenseP) run_auto_large(y);
        else run_adaptive(y, AUTO);
        break;
    }
    return res_;
  }

 private:
  const Dims& dm_;
  const Basis& bs_;
  const Opts& o_;
  const std::vector<double>& rec_;
  double *rec_loss_, *rec_params_;
  Interrupt& intr_;
  Result res_;
  Vec rot_;             // a recorded state in the original basis
  double t_start_ = 0;  // seconds since the call started, when this model's run started
  Index P_ = 0;
  Vec f0_;  // flow field f = -1/2 grad L at the current state
  double L0_ = 0;
  size_t next_rec_ = 0;
  Work w_;
  std::vector<double> hbuf_;
  // Hessian-free Rosenbrock: HVP state at the step's base point, MINRES buffers
  Work wh_;
  HeadPreconditioner prec_;
  double prec_c_ = -1;
  Vec mr_wt_, mr_r1_, mr_r2_, mr_y_, mr_v_, mr_w_, mr_w1_, mr_w2_, mr_res_;
  // The six stage systems of one Rosenbrock step share their matrix: earlier solutions x_j and
  // their images A x_j (= b_j - final residual) seed the next solve (see stage_solve).
  std::vector<Vec> st_x_, st_ax_;
  double handback_t_ = 0, handback_h_ = 0;  // where a phase of "auto" gave the run back
  Vec rho_u_;  // the stabilized method's power-iteration vector (one run's, kept across phases)

  // The max_evals budget counts gradient evaluations and Hessian-vector products.
  bool over_budget() const { return o_.max_evals > 0 && res_.n_evals + res_.n_hvp >= o_.max_evals; }
  bool over_time() const { return o_.max_seconds > 0 && intr_.elapsed() - t_start_ >= o_.max_seconds; }

  double eval(const Vec& y, Vec& f) {
    ++res_.n_evals;
    const double L = loss_grad(dm_, bs_, y.data(), f.data(), w_);
    f *= -0.5;
    return L;
  }
  void record(size_t j, const Vec& y, double L) {
    rec_loss_[j] = L;
    if (rec_params_) {
      to_original(dm_, bs_, y, rot_);
      std::copy(rot_.data(), rot_.data() + P_, rec_params_ + Index(j) * P_);
    }
  }
  // Record every grid time <= t (within rounding) at the current state.
  void record_upto(double t, const Vec& y) {
    while (next_rec_ < rec_.size() && rec_[next_rec_] <= t * (1 + 1e-12) + 1e-300) {
      record(next_rec_, y, L0_);
      ++next_rec_;
    }
  }
  // Stopping tests on the current (accepted) state. Returns true when stopping.
  bool check_stop(double t) {
    res_.t_final = t;
    if (!std::isnan(o_.target_loss) && L0_ <= o_.target_loss) { res_.status = "target_loss"; return true; }
    if (!std::isnan(o_.grad_tol) && 2.0 * f0_.norm() < o_.grad_tol) { res_.status = "converged"; return true; }
    if (t >= o_.t_end * (1 - 1e-14)) { res_.status = "t_end"; return true; }
    if (over_budget()) { res_.status = "max_evals"; return true; }
    if (o_.max_steps > 0 && res_.n_steps >= o_.max_steps) { res_.status = "max_steps"; return true; }
    if (over_time()) { res_.status = "max_seconds"; return true; }
    if (intr_.poll()) { res_.status = "interrupted"; return true; }
    return false;
  }
  // The state advances to an accepted step: (yn, fn = f(yn), Ln = L(yn)) become current.
  void accept(Vec& y, Vec& yn, Vec& fn, double Ln) {
    y.swap(yn);
    f0_.swap(fn);
    L0_ = Ln;
    ++res_.n_steps;
  }
  // Stops checked after a rejected step (the state, still at t, is unchanged). True when stopping.
  bool stop_after_rejection(double t) {
    const char* why = over_budget() ? "max_evals" : over_time() ? "max_seconds"
                      : intr_.poll() ? "interrupted" : nullptr;
    if (!why) return false;
    res_.status = why;
    res_.t_final = t;
    return true;
  }
  double next_target(double t) const {
    double tt = o_.t_end;
    if (next_rec_ < rec_.size() && rec_[next_rec_] < tt && rec_[next_rec_] > t) tt = rec_[next_rec_];
    return tt;
  }

  void run_euler(Vec& y) {
    const double eta = o_.lr, dtt = 2.0 * eta;
    const long long n_total = (long long)std::llround(o_.t_end / dtt);
    // record grid: step index round(t_j / (2 eta)), clamped to n_total
    std::vector<long long> ks(rec_.size());
    for (size_t j = 0; j < rec_.size(); ++j) ks[j] = std::min(n_total, (long long)std::llround(rec_[j] / dtt));
    Vec yn(P_), fn(P_);
    for (long long k = 0;; ++k) {
      while (next_rec_ < ks.size() && ks[next_rec_] <= k) { record(next_rec_, y, L0_); ++next_rec_; }
      res_.t_final = dtt * double(k);
      if (!std::isnan(o_.target_loss) && L0_ <= o_.target_loss) { res_.status = "target_loss"; return; }
      if (!std::isnan(o_.grad_tol) && 2.0 * f0_.norm() < o_.grad_tol) { res_.status = "converged"; return; }
      if (k >= n_total) { res_.status = "t_end"; return; }
      if (o_.max_evals > 0 && res_.n_evals >= o_.max_evals) { res_.status = "max_evals"; return; }
      if (o_.max_steps > 0 && res_.n_steps >= o_.max_steps) { res_.status = "max_steps"; return; }
      if ((k & 255) == 0 && intr_.poll()) { res_.status = "interrupted"; return; }
      if ((k & 255) == 0 && over_time()) { res_.status = "max_seconds"; return; }
      yn = y + dtt * f0_;  // theta - eta grad L
      const double Ln = eval(yn, fn);
      if (!all_finite(yn) || !std::isfinite(Ln) || !all_finite(fn)) { res_.status = "diverged"; return; }
      accept(y, yn, fn, Ln);
    }
  }

  void run_fixed_rk4(Vec& y) {
    double t = 0;
    record_upto(t, y);
    if (check_stop(t)) return;
    Vec k2(P_), k3(P_), k4(P_), yt(P_), fn(P_);
    for (;;) {
      const double tt = next_target(t);
      double h = std::min(o_.dt, tt - t);
      if (t + h >= tt * (1 - 1e-13)) h = tt - t;
      yt = y + 0.5 * h * f0_;
      eval(yt, k2);
      yt = y + 0.5 * h * k2;
      eval(yt, k3);
      yt = y + h * k3;
      eval(yt, k4);
      yt = y + (h / 6.0) * (f0_ + 2.0 * k2 + 2.0 * k3 + k4);
      const double Ln = eval(yt, fn);
      if (!all_finite(yt) || !std::isfinite(Ln) || !all_finite(fn)) { res_.status = "diverged"; res_.t_final = t; return; }
      t = (h == tt - t) ? tt : t + h;
      accept(y, yt, fn, Ln);
      record_upto(t, y);
      if (check_stop(t)) return;
    }
  }

  double err_norm(const Vec& err, const Vec& y, const Vec& yn) const {
    double s = 0;
    for (Index i = 0; i < P_; ++i) {
      const double sc = o_.atol + o_.rtol * std::max(std::abs(y(i)), std::abs(yn(i)));
      const double r = err(i) / sc;
      s += r * r;
    }
    return std::sqrt(s / double(P_));
  }
  double initial_step(const Vec& y) const {
    if (o_.h0 > 0) return o_.h0;
    Vec z = Vec::Zero(P_);
    const double d0 = err_norm(y, y, z) , d1 = err_norm(f0_, y, z);
    double h = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    return std::min(h, o_.t_end);
  }

  // ---------------------------------------------------------------- adaptive one-step methods
  // Dormand-Prince 5(4) ("rk45"), Rodas4 ("stiff") and the switching driver ("auto") share one
  // loop: step clamping to the record grid, accept/reject, step-size control, records and stops.

  // Solver of W = I + (h gamma / 2) Hessian (symmetric): Cholesky when W is positive definite
  // (always at a minimum), partial-pivoting LU otherwise (indefinite Hessian near saddles).
  struct WSolver {
    Eigen::LLT<Mat> llt;
    Eigen::PartialPivLU<Mat> lu;
    bool use_llt = true;
    void factor(const Mat& W) {
      llt.compute(W);
      use_llt = llt.info() == Eigen::Success;
      if (!use_llt) lu.compute(W);
    }
    void solve(const Vec& b, Vec& x) const { x = use_llt ? Vec(llt.solve(b)) : Vec(lu.solve(b)); }
  };

  // Cost of one Rosenbrock step's Hessian + factorisation + 6 solves, in gradient evaluations
  // (flop model; deterministic, so batch and single runs switch identically).
  double jac_cost_in_evals() const {
    const double P = double(P_), D = dm_.D, HR = double(dm_.H) * dm_.R;
    const double dense = bs_.b_diag ? 0.0 : 2.0 * D * D * D;
    const double eval = (dm_.fam == MERGED ? 4.0 * dm_.H * D * D : 6.0 * HR * D * D) + dense + 3000.0;
    const double jac = 2.0 * P * P * D * D + P * (dense + 4.0 * D * D) + P * P * P / 3.0 +
                       12.0 * P * P + 2.0 * P * P;
    return jac / eval;
  }

  // Largest |eigenvalue| of the symmetric Hs by warm-started power iteration.
  double spectral_radius(const RMat& Hs, Vec& u, int iters) const {
    if (u.size() != P_ || u.norm() == 0) {
      u.resize(P_);
      for (Index i = 0; i < P_; ++i) u(i) = 1.0 + 0.1 * std::sin(double(i) + 1.0);
    }
    u.normalize();
    double rho = 0;
    Vec z(P_);
    for (int it = 0; it < iters; ++it) {
      z.noalias() = Hs * u;
      rho = z.norm();
      if (!(rho > 0) || !std::isfinite(rho)) return 0.0;
      u = z / rho;
    }
    return rho;
  }

  // Cost of one Hessian-vector product (hvp_apply plus MINRES vector work) in gradient
  // evaluations, by a flop model (measured ratio 1.9-2.5 for separate; see docs/theory.md).
  double hvp_cost_in_evals() const {
    const double P = double(P_), D = dm_.D, HR = double(dm_.H) * dm_.R;
    const double dense = bs_.b_diag ? 0.0 : 2.0 * D * D * D;
    const double eval = (dm_.fam == MERGED ? 4.0 * dm_.H * D * D : 6.0 * HR * D * D) + dense + 3000.0;
    const double hv = (dm_.fam == MERGED ? 12.0 * dm_.H * D * D : 12.0 * HR * D * D) + dense +
                      3000.0 + 20.0 * P;
    return hv / eval;
  }
  // Work so far in gradient-evaluation units (deterministic: "auto" compares methods by it).
  double work_done() const { return double(res_.n_evals) + hvp_cost_in_evals() * double(res_.n_hvp); }

  // Preconditioned MINRES (Paige & Saunders; residual vector by its recurrence) for
  // (I + c H) x = b, H the Hessian prepared in wh_ at y (symmetric, possibly indefinite near
  // saddles), x0 = 0, preconditioned by HeadPreconditioner (SPD, prepared at y for this c). Stops when
  // err_norm(residual) <= kKrylovTol (the step controller's weighted norm). False if not converged.
  bool minres(const Vec& y, double c, const Vec& b, Vec& x) {
    x.setZero(P_);
    if (c != prec_c_) { prec_.prepare(dm_, bs_, y.data(), c); prec_c_ = c; }
    const double ktol2 = kKrylovTol * kKrylovTol * double(P_);
    mr_r1_ = b; mr_r2_ = b; mr_res_ = b;
    if (b.cwiseProduct(mr_wt_).squaredNorm() <= ktol2) return true;
    prec_.apply(b, mr_y_);
    const double beta1 = std::sqrt(b.dot(mr_y_));
    if (!(beta1 > 0)) return std::isfinite(beta1);
    mr_w_.setZero(P_); mr_w1_.setZero(P_); mr_w2_.setZero(P_);
    mr_v_.resize(P_);
    double oldb = 0, beta = beta1, dbar = 0, epsln = 0, phibar = beta1, cs = -1, sn = 0;
    for (int k = 1; k <= kKrylovMaxIt; ++k) {
      mr_v_ = mr_y_ / beta;
      hvp_apply(dm_, bs_, y.data(), mr_v_.data(), mr_y_.data(), wh_);
      ++res_.n_hvp;
      mr_y_ = mr_v_ + c * mr_y_;
      if (k >= 2) mr_y_ -= (beta / oldb) * mr_r1_;
      const double alfa = mr_v_.dot(mr_y_);
      mr_y_ -= (alfa / beta) * mr_r2_;
      mr_r1_.swap(mr_r2_);
      mr_r2_ = mr_y_;
      prec_.apply(mr_r2_, mr_y_);
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
  bool stage_solve(const Vec& y, double c, const Vec& b, Vec& x) {
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

  // mode: RK45, STIFF (Rodas4), AUTO (switching between the two; dense Hessian) or RK45_PHASE
  // (Dormand-Prince, handing the run back to run_auto_large once stability-limited). krylov: Rodas4
  // with its stage systems solved by MINRES on Hessian-vector products instead of a dense Hessian +
  // factorisation. t0, h_start: a run taken over from another integrator at time t0. rate_limit > 0:
  // an episode begun by "auto"'s stabilized method, which gets the run back (status still "running",
  // handback_t_/handback_h_ set) once, after 4 steps, the work per unit time over the last 3 exceeds
  // rate_limit (the explicit method's).
  void run_adaptive(Vec& y, int mode, bool krylov = false, double t0 = 0, double h_start = 0,
                    double rate_limit = 0) {
    // Dormand-Prince 5(4)
    static const double a21 = 1.0 / 5, a31 = 3.0 / 40, a32 = 9.0 / 40, a41 = 44.0 / 45,
                        a42 = -56.0 / 15, a43 = 32.0 / 9, a51 = 19372.0 / 6561,
                        a52 = -25360.0 / 2187, a53 = 64448.0 / 6561, a54 = -212.0 / 729,
                        a61 = 9017.0 / 3168, a62 = -355.0 / 33, a63 = 46732.0 / 5247,
                        a64 = 49.0 / 176, a65 = -5103.0 / 18656, b1 = 35.0 / 384,
                        b3 = 500.0 / 1113, b4 = 125.0 / 192, b5 = -2187.0 / 6784, b6 = 11.0 / 84,
                        e1 = 71.0 / 57600, e3 = -71.0 / 16695, e4 = 71.0 / 1920,
                        e5 = -17253.0 / 339200, e6 = 22.0 / 525, e7 = -1.0 / 40;
    // Rodas4 (Hairer & Wanner, rodas.f METH=1), in the form
    //   (I/(h g) - J) k_i = f(y + sum_j A_ij k_j) + sum_j (C_ij / h) k_j,
    //   y6 = y + A5. k + k5, y1 = y6 + k6, error estimate k6 (stiffly accurate, L-stable).
    static const double rg = 0.25, ra21 = 1.544, ra31 = 0.9466785280815826,
                        ra32 = 0.2557011698983284, ra41 = 3.314825187068521,
                        ra42 = 2.896124015972201, ra43 = 0.9986419139977817,
                        ra51 = 1.221224509226641, ra52 = 6.019134481288629,
                        ra53 = 12.53708332932087, ra54 = -0.6878860361058950, rc21 = -5.6688,
                        rc31 = -2.430093356833875, rc32 = -0.2063599157091915,
                        rc41 = -0.1073529058151375, rc42 = -9.594562251023355,
                        rc43 = -20.47028614809616, rc51 = 7.496443313967647,
                        rc52 = -10.24680431464352, rc53 = -33.99990352819905,
                        rc54 = 11.70890893206160, rc61 = 8.083246795921522,
                        rc62 = -7.981132988064893, rc63 = -31.52159432874371,
                        rc64 = 16.31930543123136, rc65 = -6.058818238834054;
    const bool auto_mode = mode == AUTO;
    bool ros = mode == STIFF;  // current method: Rosenbrock (true) or Dormand-Prince (false)
    double t = t0;
    record_upto(t, y);
    if (check_stop(t)) return;
    WorkRate recent(3, work_done(), t);  // an episode's last 3 steps (rate_limit > 0)
    int episode_steps = 0;
    double h = h_start > 0 ? h_start : initial_step(y);
    Vec k2(P_), k3(P_), k4(P_), k5(P_), k6(P_), k7(P_), yt(P_), yn(P_), err(P_), rhs(P_);
    Vec& kr1 = k7;  // Rosenbrock stage vectors reuse the RK buffers
    RMat Hs;
    Mat W;
    WSolver ws;
    Vec pu;  // power-iteration vector
    bool have_jac = false, last_rejected = false;
    double err_old = 1e-4;  // the last accepted step's error norm (Dormand-Prince PI control)
    // ---- auto bookkeeping (deterministic cost model, in gradient-evaluation units)
    // cj: a Rosenbrock step's cost beyond its 6 evaluations (the Hessian and its factorisation)
    const double cj = auto_mode ? jac_cost_in_evals() : 0.0;
    int stiff_count = 0, nonstiff_count = 0, ros_steps = 0, ros_worse = 0;
    // trial: enough Rosenbrock steps for h to outgrow the cost ratio growing x2 per step
    auto trial_len = [&] {
      return 2 + int(std::ceil(std::log(std::max(1.0, (6.0 + cj) / 6.0)) / std::log(2.0)));
    };
    int trial = trial_len();
    // The first trial only after the explicit method has spent 4x a trial's cost (so a failed
    // trial costs at most ~25% on a short run); a failed trial multiplies the wait by 4, 8, ...
    double backoff = 4.0 * trial * (6.0 + cj), backoff_next = 4.0, rk_spent = 0, ros_spent = 0,
           rho_j = 0;
    auto switch_to_rk = [&](bool failed) {
      ros = false;
      have_jac = false;
      // a failed trial: retry only after the explicit method has spent 4x (8x, ...) its cost
      if (failed) { backoff = backoff_next * std::max(ros_spent, 6.0 * 50); backoff_next *= 2; }
      else { backoff = 0; backoff_next = 4.0; }
      rk_spent = 0;
      stiff_count = nonstiff_count = 0;
      if (rho_j > 0) h = std::min(h, 3.0 / rho_j);
    };
    for (;;) {
      const double tt = next_target(t);
      double hs = h;
      bool clamp = false;
      if (t + hs >= tt * (1 - 1e-13)) { hs = tt - t; clamp = true; }
      double en, Ln = kNaN, hlamb = 0;
      Vec* fnew;
      if (!ros) {
        Vec& f0 = f0_;
        yt = y + hs * a21 * f0; eval(yt, k2);
        yt = y + hs * (a31 * f0 + a32 * k2); eval(yt, k3);
        yt = y + hs * (a41 * f0 + a42 * k2 + a43 * k3); eval(yt, k4);
        yt = y + hs * (a51 * f0 + a52 * k2 + a53 * k3 + a54 * k4); eval(yt, k5);
        yt = y + hs * (a61 * f0 + a62 * k2 + a63 * k3 + a64 * k4 + a65 * k5); eval(yt, k6);
        yn = y + hs * (b1 * f0 + b3 * k3 + b4 * k4 + b5 * k5 + b6 * k6);
        Ln = eval(yn, k7);
        err = hs * (e1 * f0 + e3 * k3 + e4 * k4 + e5 * k5 + e6 * k6 + e7 * k7);
        en = err_norm(err, y, yn);
        if (!std::isfinite(en) || !std::isfinite(Ln) || !all_finite(k7)) en = 1e10;
        // Hairer's DOPRI5 stiffness test: h * |f(y1) - f(y6)| / |y1 - y6| estimates h rho(J).
        const double den = (yn - yt).squaredNorm();
        if (den > 0) hlamb = hs * std::sqrt((k7 - k6).squaredNorm() / den);
        fnew = &k7;
      } else {
        if (!have_jac) {
          if (krylov) {
            hvp_prepare(dm_, bs_, y.data(), wh_);
            prec_c_ = -1;
          } else {
            Hs.resize(P_, P_);
            hessian(dm_, bs_, y.data(), Hs.data(), w_);
            ++res_.n_jac;
            if (auto_mode) rho_j = 0.5 * spectral_radius(Hs, pu, 6);
          }
          have_jac = true;
        }
        const double hg = hs * rg;
        if (!krylov) {
          W = (0.5 * hg) * Hs;
          W.diagonal().array() += 1.0;
          ws.factor(W);
        }
        bool kfail = false;
        st_x_.clear();
        // err_norm(r) = |r .* wt| / sqrt(P) with the weights of the base point y (Krylov stops)
        if (krylov) mr_wt_ = (o_.atol + o_.rtol * y.array().abs()).inverse().matrix();
        st_ax_.clear();
        auto solve = [&](const Vec& b, Vec& x) {
          if (!krylov) { ws.solve(b, x); return; }
          if (kfail) { x.setZero(P_); return; }
          if (!stage_solve(y, 0.5 * hg, b, x)) kfail = true;
        };
        Vec &r1 = kr1, &r2 = k2, &r3 = k3, &r4 = k4, &r5 = k5, &r6 = k6, &F = err;
        rhs = hg * f0_; solve(rhs, r1);
        yt = y + ra21 * r1; eval(yt, F);
        rhs = hg * F + (rg * rc21) * r1; solve(rhs, r2);
        yt = y + ra31 * r1 + ra32 * r2; eval(yt, F);
        rhs = hg * F + rg * (rc31 * r1 + rc32 * r2); solve(rhs, r3);
        yt = y + ra41 * r1 + ra42 * r2 + ra43 * r3; eval(yt, F);
        rhs = hg * F + rg * (rc41 * r1 + rc42 * r2 + rc43 * r3); solve(rhs, r4);
        yt = y + ra51 * r1 + ra52 * r2 + ra53 * r3 + ra54 * r4; eval(yt, F);
        rhs = hg * F + rg * (rc51 * r1 + rc52 * r2 + rc53 * r3 + rc54 * r4); solve(rhs, r5);
        yt += r5; eval(yt, F);
        rhs = hg * F + rg * (rc61 * r1 + rc62 * r2 + rc63 * r3 + rc64 * r4 + rc65 * r5);
        solve(rhs, r6);
        yn = yt + r6;
        en = err_norm(r6, y, yn);
        if (!std::isfinite(en) || !all_finite(yn) || kfail) en = 1e10;
        if (en <= 1.0) {  // f(y1) only for an accepted step
          Ln = eval(yn, F);
          if (!std::isfinite(Ln) || !all_finite(F)) en = 1e10;
        }
        fnew = &F;
      }
      const double q = ros ? 0.25 : 0.2, grow = ros ? 6.0 : 10.0;
      const double step_cost = ros ? 6.0 + cj : 6.0;
      if (en <= 1.0) {
        t = clamp ? tt : t + hs;
        accept(y, yn, *fnew, Ln);
        have_jac = false;
        // Dormand-Prince: Hairer's PI control (beta = 0.04, DOPRI5). At the stability limit, where
        // the late phase of a large-D flow runs, the I controller alternates growth and rejection
        // (20% rejected); the PI term removes nearly all of those. Rosenbrock keeps the I
        // controller: "auto" judges a Rosenbrock trial by how fast its steps grow.
        const double beta = ros ? 0.0 : 0.04;
        double fac = 0.9 * std::pow(std::max(en, 1e-10), -(q - 0.75 * beta)) * std::pow(err_old, beta);
        if (!ros) err_old = std::max(en, 1e-4);
        fac = std::min(last_rejected ? 1.0 : grow, std::max(0.2, fac));
        // a clamped step says nothing about the step the solution allows: keep h if larger
        h = clamp ? std::max(h, hs * fac) : hs * fac;
        last_rejected = false;
        record_upto(t, y);
        if (check_stop(t)) return;
        if (rate_limit > 0) {
          recent.add(work_done(), t);
          if (++episode_steps >= 4 && recent.rate() > rate_limit) {
            handback_t_ = t;
            handback_h_ = h;
            return;
          }
        }
        if (!ros) {
          // DOPRI5 rule: 15 stability-limited steps make the problem stiff, 6 others reset.
          if (hlamb > 3.25) { ++stiff_count; nonstiff_count = 0; }
          else if (++nonstiff_count >= 6) stiff_count = 0;
          if (mode == RK45_PHASE && stiff_count >= 15) {
            handback_t_ = t;
            handback_h_ = h;
            return;
          }
        }
        if (auto_mode) {
          if (!ros) {
            rk_spent += step_cost;
            if (stiff_count >= 15 && rk_spent >= backoff) {
              ros = true;
              have_jac = false;
              ros_steps = ros_worse = 0;
              trial = trial_len();
              ros_spent = 0;
            }
          } else {
            ros_spent += step_cost;
            ++ros_steps;
            // Dormand-Prince would step min(h, 3.3 / rho(J)) at 6 evaluations (stability bound
            // on the negative real axis); compare costs per unit time.
            const double h_rk = rho_j > 0 ? std::min(h, 3.3 / rho_j) : h;
            const bool worse = step_cost / h > 6.0 / h_rk;
            ros_worse = worse ? ros_worse + 1 : 0;
            // during the trial the step must keep growing (x1.5 per step) while still worse
            const bool stalled = ros_steps <= trial && worse && h < 1.5 * hs;
            if (stalled || (ros_steps == trial && worse) || (ros_steps > trial && ros_worse >= 3))
              switch_to_rk(ros_steps <= trial + 3);
          }
        }
      } else {
        ++res_.n_rejected;
        h = hs * std::max(0.1, 0.9 * std::pow(en, -q));
        last_rejected = true;
        if (auto_mode) (ros ? ros_spent : rk_spent) += step_cost;
        if (stop_after_rejection(t)) return;
      }
      if (h < 1e-14 * std::max(1.0, t)) {
        // a stiff method in trouble near a saddle: let the explicit method take over
        if (auto_mode && ros) { switch_to_rk(true); h = std::max(h, 1e-6 * std::max(1.0, t)); continue; }
        finish_small_step(t);
        return;
      }
    }
  }


  // ---------------------------------------------------------------- "stabilized"
  // Order-4 stabilized explicit Runge-Kutta method (ROCK4-type; coefficients in stabilized_tables.h,
  // built by fastattn/population/stabilized.py; docs/theory.md section 4). With s evaluations a step
  // is stable for h * rho(J) <= ell_s ~ 0.35 s^2, so the step is set by accuracy and the stage count
  // by h * rho: where Dormand-Prince sits at its stability limit (the late phase of a large flow)
  // this costs ~sqrt(h rho) instead of ~h rho evaluations, without a Hessian.
  // in_auto (a phase of run_auto_large) adds two hand-overs:
  //  - back to Dormand-Prince (status "running", handback_t_/h_) after 10 steps in a row within
  //    its stability interval, h rho < 3.3: there it steps as far for 6 evaluations, and its
  //    order 5 usually farther;
  //  - a Hessian-free Rodas4 episode after 10 steps in a row with kStabHandOverS stages or more
  //    (h rho >~ 300: typically the flow has settled, and its stiff components, damped only by
  //    |R| <= 0.95 a step, keep the error estimate up). The episode hands the run back when its
  //    work per unit time exceeds this method's over those 10 steps; the next one waits until this
  //    method has done 4x the last episode's work (x2 per episode shorter than 10 steps).
  void run_stabilized(Vec& y, bool in_auto, double t0 = 0, double h_start = 0) {
    double t = t0;
    record_upto(t, y);
    if (check_stop(t)) return;
    double h = h_start > 0 ? h_start : initial_step(y);
    Vec prev(P_), cur(P_), nxt(P_), fc(P_), k1(P_), k2(P_), k3(P_), k4(P_), k5(P_), yn(P_),
        err(P_), fn(P_);
    // rho(J) by a nonlinear power iteration, re-estimated every 25 accepted steps (warm-started,
    // also across the phases of "auto"); the margin covers an estimate converging from below.
    double rho = flow_radius(y, rho_u_, rho_u_.size() == P_ ? 12 : 50);
    int since = 0, settled = 0, inside_dp = 0;
    bool last_rejected = false;
    double err_old = 1e-4;
    WorkRate recent(10, work_done(), t);
    double wait_until = 0, wait_mult = 4;
    for (;;) {
      if (since >= 25) { rho = flow_radius(y, rho_u_, 12); since = 0; }
      const double tt = next_target(t);
      double hs = h;
      bool clamp = false;
      if (t + hs >= tt * (1 - 1e-13)) { hs = tt - t; clamp = true; }
      int s = kStabSMin;
      while (s < kStabSMax && kStabEll[s - kStabSMin] < kStabMargin * hs * rho) ++s;
      if (kStabEll[s - kStabSMin] < kStabMargin * hs * rho) {  // beyond the largest table: shorten
        hs = kStabEll[s - kStabSMin] / (kStabMargin * rho);
        clamp = false;
      }
      const int m = s - 4;
      const double* mu = kStabMu + kStabOffset[s - kStabSMin];
      const double* nu = kStabNu + kStabOffset[s - kStabSMin];
      const double* ka = kStabKappa + kStabOffset[s - kStabSMin];
      const double* c = kStabFinish + 18 * (s - kStabSMin);  // a(6) b(4) a5(3) bh(5)
      // the recurrence: every stage a polynomial in hJ bounded by 1 on [-ell_s, 0]
      prev = y;
      cur = y + (mu[0] * hs) * f0_;
      for (int j = 1; j < m; ++j) {
        eval(cur, fc);
        nxt = nu[j] * cur + ka[j] * prev + (mu[j] * hs) * fc;
        prev.swap(cur);
        cur.swap(nxt);
      }
      // the finishing procedure (order 4) and the embedded order-3 stage
      eval(cur, k1);
      nxt = cur + (hs * c[0]) * k1; eval(nxt, k2);
      nxt = cur + hs * (c[1] * k1 + c[2] * k2); eval(nxt, k3);
      nxt = cur + hs * (c[3] * k1 + c[4] * k2 + c[5] * k3); eval(nxt, k4);
      nxt = cur + hs * (c[10] * k1 + c[11] * k2 + c[12] * k3); eval(nxt, k5);
      yn = cur + hs * (c[6] * k1 + c[7] * k2 + c[8] * k3 + c[9] * k4);
      err = hs * ((c[6] - c[13]) * k1 + (c[7] - c[14]) * k2 + (c[8] - c[15]) * k3 +
                  (c[9] - c[16]) * k4 - c[17] * k5);
      double en = err_norm(err, y, yn), Ln = kNaN;
      if (!std::isfinite(en) || !all_finite(yn)) en = 1e10;
      if (en <= 1.0) {
        Ln = eval(yn, fn);
        if (!std::isfinite(Ln) || !all_finite(fn)) en = 1e10;
      }
      if (en <= 1.0) {
        t = clamp ? tt : t + hs;
        accept(y, yn, fn, Ln);
        ++since;
        const double fac = std::min(last_rejected ? 1.0 : 5.0,
                                    std::max(0.2, 0.9 * std::pow(std::max(en, 1e-10), -0.22) *
                                                      std::pow(err_old, 0.04)));
        err_old = std::max(en, 1e-4);
        h = clamp ? std::max(h, hs * fac) : hs * fac;
        last_rejected = false;
        record_upto(t, y);
        if (check_stop(t)) return;
        recent.add(work_done(), t);
        inside_dp = hs * rho < 3.3 ? inside_dp + 1 : 0;
        if (in_auto && inside_dp >= 10) {
          handback_t_ = t;
          handback_h_ = std::min(h, 3.3 / rho);
          return;
        }
        settled = s >= kStabHandOverS ? settled + 1 : 0;
        if (in_auto && settled >= 10 && work_done() >= wait_until) {
          const double rate = recent.rate();
          const double w0 = work_done();
          const long long n0 = res_.n_steps;
          run_adaptive(y, STIFF, true, t, h, rate);
          if (res_.status != "running") return;
          wait_mult = res_.n_steps - n0 < 10 ? 2 * wait_mult : 4;
          wait_until = work_done() + wait_mult * (work_done() - w0);
          t = handback_t_;
          h = handback_h_;
          since = 25;  // a fresh estimate of rho(J)
          settled = 0;
          recent = WorkRate(10, work_done(), t);
        }
      } else {
        ++res_.n_rejected;
        h = hs * std::max(0.1, 0.8 * std::pow(en, -0.25));
        last_rejected = true;
        if (stop_after_rejection(t)) return;
      }
      if (h < 1e-14 * std::max(1.0, t)) {
        finish_small_step(t);
        return;
      }
    }
  }

  // "auto" above P = 2000: Dormand-Prince and the stabilized method (with its Rodas4 episodes)
  // alternate, each handing the run to the other (run_adaptive RK45_PHASE: once stability-limited;
  // run_stabilized: after 10 steps within Dormand-Prince's stability interval). Each phase lasts
  // at least 10 steps; a back-off before switching again measured dearer (D = 256, N = 128: 25k
  // evaluations against 20k without).
  void run_auto_large(Vec& y) {
    double t = 0, h = 0;
    for (bool stab = false;; stab = !stab) {
      if (stab) run_stabilized(y, true, t, h);
      else run_adaptive(y, RK45_PHASE, false, t, h);
      if (res_.status != "running") return;
      t = handback_t_;
      h = handback_h_;
    }
  }

  // Spectral radius of the flow's Jacobian at y (f0_ = f(y)): power iteration on difference
  // quotients (one evaluation each), until two estimates agree to 1%; u is kept for a warm start.
  double flow_radius(const Vec& y, Vec& u, int max_iters) {
    if (u.size() != P_ || !(u.norm() > 0)) {
      u.resize(P_);
      for (Index i = 0; i < P_; ++i) u(i) = 1.0 + 0.1 * std::sin(double(i) + 1.0);
    }
    Vec yt(P_), ft(P_);
    double rho = 0;
    for (int it = 0; it < max_iters; ++it) {
      u.normalize();
      const double eps = 1e-7 * (1.0 + y.norm());
      yt = y + eps * u;
      eval(yt, ft);
      u = (ft - f0_) / eps;
      const double r = u.norm();
      if (!std::isfinite(r) || !(r > 0)) break;
      const bool done = it > 0 && std::abs(r - rho) <= 0.01 * r;
      rho = r;
      if (done) break;
    }
    return rho;
  }

  void finish_small_step(double t) {
    res_.t_final = t;
    // The step collapsed: a finite-time blow-up (diverged) or a non-finite field.
    res_.status = (L0_ > 1e100 || !std::isfinite(L0_)) ? "diverged" : "step_too_small";
    if (f0_.norm() > 1e50) res_.status = "diverged";
  }

  // method "ode23s": Shampine-Reichelt ode23s Rosenbrock pair (L-stable, order 2 with order-3 error estimate),
  // using the analytic Jacobian J = -1/2 Hessian. W = I - h d J = I + (h d / 2) Hessian.
  void run_ode23s(Vec& y) {
    const double d = 1.0 / (2.0 + std::sqrt(2.0)), e32 = 6.0 + std::sqrt(2.0);
    double t = 0;
    record_upto(t, y);
    if (check_stop(t)) return;
    double h = initial_step(y);
    RMat Hs(P_, P_);
    Mat W(P_, P_);
    Vec k1(P_), k2(P_), k3(P_), F1(P_), F2(P_), yt(P_), yn(P_), err(P_);
    bool have_jac = false, last_rejected = false;
    for (;;) {
      if (!have_jac) {
        hessian(dm_, bs_, y.data(), Hs.data(), w_);
        ++res_.n_jac;
        have_jac = true;
      }
      const double tt = next_target(t);
      double hs = h;
      bool clamp = false;
      if (t + hs >= tt * (1 - 1e-13)) { hs = tt - t; clamp = true; }
      W = (0.5 * hs * d) * Hs;
      W.diagonal().array() += 1.0;
      Eigen::PartialPivLU<Mat> lu(W);
      k1 = lu.solve(f0_);
      yt = y + 0.5 * hs * k1;
      eval(yt, F1);
      k2 = lu.solve(F1 - k1) + k1;
      yn = y + hs * k2;
      const double Ln = eval(yn, F2);
      k3 = lu.solve(F2 - e32 * (k2 - F1) - 2.0 * (k1 - f0_));
      err = (hs / 6.0) * (k1 - 2.0 * k2 + k3);
      double en = err_norm(err, y, yn);
      if (!std::isfinite(en) || !std::isfinite(Ln) || !all_finite(F2) || !all_finite(yn)) en = 1e10;
      if (en <= 1.0) {
        t = clamp ? tt : t + hs;
        accept(y, yn, F2, Ln);
        have_jac = false;
        double fac = 0.8 * std::pow(std::max(en, 1e-10), -1.0 / 3.0);
        fac = std::min(last_rejected ? 1.0 : 5.0, std::max(0.2, fac));
        h = clamp ? std::max(h, hs * fac) : hs * fac;
        last_rejected = false;
        record_upto(t, y);
        if (check_stop(t)) return;
      } else {
        ++res_.n_rejected;
        h = hs * std::max(0.1, 0.8 * std::pow(en, -1.0 / 3.0));
        last_rejected = true;
        if (stop_after_rejection(t)) return;
      }
      if (h < 1e-14 * std::max(1.0, t)) { finish_small_step(t); return; }
    }
  }
};

py::dict py_integrate(int fam, int D, int H, int R, const Arr& params, const Arr& cov,
                      const Arr& ws, const Arr& noise, const Arr& inv_n, int method,
                      double t_end, double lr, double dt, double rtol, double atol, double h0,
                      const Arr& record_times, bool record_params, double target_loss,
                      double grad_tol, long long max_evals, long long max_steps,
                      double max_seconds) {
  Dims dm(fam, D, H, R);
  auto [K, P] = read_params(params, dm);
  MomentSet ms = read_moments(cov, ws, noise, inv_n, D);
  if (ms.count() != 1 && ms.count() != K) throw std::invalid_argument("moments: need 1 or K sets");
  if (method < 0 || method > 7) throw std::invalid_argument("method must be 0..7");
  std::vector<double> rec(record_times.data(), record_times.data() + record_times.size());
  const Index T = Index(rec.size());
  Opts o{method, t_end, lr, dt, rtol, atol, h0, target_loss, grad_tol, max_seconds, max_evals,
         max_steps, record_params};
  Arr loss(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(T)});
  Arr fin(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
  Arr recp(record_params ? std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(T), py::ssize_t(P)}
                         : std::vector<py::ssize_t>{0});
  std::vector<Result> results(K);
  {
    double* lo = loss.mutable_data();
    double* fo = fin.mutable_data();
    double* rp = record_params ? recp.mutable_data() : nullptr;
    const double* th = params.data();
    std::fill(lo, lo + K * T, kNaN);
    if (rp) std::fill(rp, rp + K * T * P, kNaN);
    py::gil_scoped_release nogil;
    std::vector<Basis> bases;
    for (Index m = 0; m < ms.count(); ++m)
      bases.push_back(make_eigen(ms.cov[m], ms.ws[m], ms.noise[m], ms.inv_n[m]));
    Interrupt intr;
    Vec y(P), yr(P);
    for (Index k = 0; k < K; ++k) {
      const Basis& bs = bases[ms.count() == 1 ? 0 : k];
      if (intr.hit) {
        results[k].status = "interrupted";
        std::copy(th + k * P, th + (k + 1) * P, fo + k * P);
        continue;
      }
      rotate_params(dm, bs.E, th + k * P, y.data(), true);
      Runner run(dm, bs, o, rec, lo + k * T, rp ? rp + k * T * P : nullptr, intr);
      results[k] = run.run(y);
      to_original(dm, bs, y, yr);
      std::copy(yr.data(), yr.data() + P, fo + k * P);
    }
  }
  py::dict out;
  py::list status;
  Arr ne(std::vector<py::ssize_t>{py::ssize_t(K)}), ns(std::vector<py::ssize_t>{py::ssize_t(K)}),
      nj(std::vector<py::ssize_t>{py::ssize_t(K)}), nr(std::vector<py::ssize_t>{py::ssize_t(K)}),
      nh(std::vector<py::ssize_t>{py::ssize_t(K)}),
      tf(std::vector<py::ssize_t>{py::ssize_t(K)});
  for (Index k = 0; k < K; ++k) {
    status.append(results[k].status);
    ne.mutable_data()[k] = double(results[k].n_evals);
    ns.mutable_data()[k] = double(results[k].n_steps);
    nj.mutable_data()[k] = double(results[k].n_jac);
    nr.mutable_data()[k] = double(results[k].n_rejected);
    nh.mutable_data()[k] = double(results[k].n_hvp);
    tf.mutable_data()[k] = results[k].t_final;
  }
  out["loss"] = loss;
  out["final_params"] = fin;
  out["params"] = record_params ? py::object(recp) : py::object(py::none());
  out["status"] = status;
  out["n_evals"] = ne;
  out["n_steps"] = ns;
  out["n_jac"] = nj;
  out["n_rejected"] = nr;
  out["n_hvp"] = nh;
  out["t_final"] = tf;
  return out;
}

}  // namespace

void register_population(py::module_& m) {
  m.def("loss_grad", &py_loss_grad, py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"),
        py::arg("params"), py::arg("cov"), py::arg("w_second"), py::arg("noise"), py::arg("inv_n"),
        "Population loss [K] and gradient [K, P] of K models (params [P] or [K, P]); moments are "
        "[Km, D, D] / [Km] with Km in {1, K}. family: 0 merged/cubic_mlp, 1 separate.");
  py::class_<Evaluator>(m, "Evaluator")
      .def(py::init<int, int, int, int, const Arr&, const Arr&, double, double>(),
           py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"), py::arg("cov"),
           py::arg("w_second"), py::arg("noise"), py::arg("inv_n"))
      .def_property_readonly("P", &Evaluator::P)
      .def_property_readonly("eig_diagonal", &Evaluator::eig_diagonal)
      .def("eigvecs", &Evaluator::eigvecs)
      .def("loss_grad", &Evaluator::lg, py::arg("params"), py::arg("eigen") = false)
      .def("hessian", &Evaluator::hess, py::arg("params"))
      .def("hvp", &Evaluator::hv, py::arg("params"), py::arg("u"))
      .def("hessian_diag", &Evaluator::hdiag, py::arg("params"))
      .def("stage_preconditioner", &Evaluator::precond, py::arg("params"), py::arg("c"), py::arg("r"),
           "(I + c Hb)^-1 r, Hb the per-head Gauss-Newton blocks (Jacobi if B, Lambda not diagonal)")
      .def("to_eigen", [](const Evaluator& e, const Arr& p) { return e.rot(p, true); })
      .def("from_eigen", [](const Evaluator& e, const Arr& p) { return e.rot(p, false); });
  m.def("integrate", &py_integrate, py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"),
        py::arg("params"), py::arg("cov"), py::arg("w_second"), py::arg("noise"),
        py::arg("inv_n"), py::arg("method"), py::arg("t_end"), py::arg("lr"), py::arg("dt"),
        py::arg("rtol"), py::arg("atol"), py::arg("h0"), py::arg("record_times"),
        py::arg("record_params"), py::arg("target_loss"), py::arg("grad_tol"),
        py::arg("max_evals"), py::arg("max_steps"), py::arg("max_seconds"),
        "Integrate K models' gradient flow (method 0 euler, 1 rk4, 2 rk45, 3 stiff (Rodas4), "
        "4 ode23s, 5 auto, 6 stiff_krylov (Hessian-free Rodas4), 7 stabilized (order-4 "
        "stabilized explicit)).");
  m.def("stabilized_table", [](int s) {
        if (s < kStabSMin || s > kStabSMax) throw std::invalid_argument("no table for this s");
        const int off = kStabOffset[s - kStabSMin], m = s - 4;
        const double* c = kStabFinish + 18 * (s - kStabSMin);
        auto arr = [](const double* p, int n) { return Arr(n, p); };
        py::dict d;
        d["ell"] = kStabEll[s - kStabSMin];
        d["mu"] = arr(kStabMu + off, m);
        d["nu"] = arr(kStabNu + off, m);
        d["kappa"] = arr(kStabKappa + off, m);
        d["a"] = arr(c, 6);
        d["b"] = arr(c + 6, 4);
        d["a5"] = arr(c + 10, 3);
        d["bh"] = arr(c + 13, 5);
        return d;
      }, py::arg("s"), "Coefficients of the 'stabilized' method with s stages (stabilized_tables.h).");
}
