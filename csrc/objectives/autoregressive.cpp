#include "objectives/autoregressive.h"

#include <complex>
#include <stdexcept>
#include <vector>

namespace fastattn::autoregressive {

namespace {

// Templated on the scalar so that one body serves the loss (double) and, by the complex step
// (std::complex<double>), the Hessian-vector products. Only polynomial operations appear (no
// conjugation, no absolute values), so the complex evaluation is holomorphic.
template <typename S>
using SMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename S>
using SVec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// dl/dC = k_R (C1) 1^T + k_C C - k_I I + k_X (c 1^T + R_i e_{i,pi(i)}) + k_Y c_i e_{i,pi(i)}: every T
// adds to the five scalar coefficients, so the d x d gradient is formed once per evaluation.
template <typename S>
struct CGrad {
  S kR{0}, kC{0}, kI{0}, kX{0}, kY{0};
};

// The C-dependent sums every T shares. The loss is evaluated as a sum of squares (see
// row_loss_t), so it is >= 0 in floating point and accurate to rounding relative to its own value:
// the expanded "... - 2 p_T tr C + d" cancels to +-1e-13 at a zero-loss optimum.
template <typename S>
struct CSums {
  S Ssum{0}, F{0}, tr{0}, X{0}, Y{0};
  S Foff{0};           // sum of C_ij^2 over the entries that are neither diagonal nor (orthogonal) partners
  const S* diag{};     // C_ii [d]
  const S* R{};        // C 1 [d]
  const S* c{};        // C_{i,pi(i)} [d] (orthogonal)
};

// l = p_{T-1}^2 |C1|^2 + Q2 |C|_F^2 - 2 p_T tr C + d (+ orthogonal terms) in the form
//   unitary      p_{T-1}^2 |C1|^2 (+ p_{T-1}^2 |C|_F^2 paper) + Q2' |C|_F^2 + |p_T C - I|_F^2
//   orthogonal   sum_i (p_{T-1} R_i + Q c_i)^2 + Q2' (|C|_F^2 - sum_i c_i^2) + sum_{j != pi(i)} (p_T C_ij - d_ij)^2
// with Q2' = Q2 - p_T^2 (the same polynomial; |p_T C - I|^2 = p_T^2 Foff + sum_i (p_T C_ii - 1)^2).
template <typename S>
S row_loss_t(int context, int d, const CSums<S>& cs, const S* p, int T, CGrad<S>* gC, S* gp) {
  const S Ssum = cs.Ssum, F = cs.F, tr = cs.tr, X = cs.X, Y = cs.Y;
  const S pT = p[T - 1], pm = p[T - 2];  // p_T and p_{T-1}
  S Q(0), Q2(0);
  for (int t = 0; t < T; ++t)
    if (t != T - 2) {
      Q += p[t];
      Q2 += p[t] * p[t];
    }
  S rest2(0);  // Q2 without p_T^2, summed directly (a difference could round below 0)
  for (int t = 0; t < T - 2; ++t) rest2 += p[t] * p[t];
  const bool paper = context == UNITARY_PAPER, orth = context == ORTHOGONAL;
  const S extra = paper ? pm * pm : S(0);  // Prop. 4's double-counted term
  S loss = pT * pT * cs.Foff;
  for (int i = 0; i < d; ++i) {
    const S e = pT * cs.diag[i] - S(1);
    loss += e * e;
  }
  if (orth) {
    for (int i = 0; i < d; ++i) {
      const S r = pm * cs.R[i] + Q * cs.c[i];
      loss += r * r;
    }
    S fo = cs.Foff;  // |C|_F^2 - sum_i c_i^2, as a sum of squares
    for (int i = 0; i < d; ++i) fo += cs.diag[i] * cs.diag[i];
    loss += rest2 * fo;
  } else {
    loss += pm * pm * Ssum + (rest2 + extra) * F;
  }
  if (gC) {
    gC->kR += S(2) * pm * pm;
    gC->kC += S(2) * (Q2 + extra);
    gC->kI += S(2) * pT;
    if (orth) {
      gC->kX += S(2) * pm * Q;
      gC->kY += S(2) * (Q * Q - Q2);
    }
  }
  if (gp) {
    for (int t = 0; t < T; ++t) {
      if (t == T - 2) continue;
      S g = S(2) * p[t] * F;
      if (orth) g += S(2) * pm * X + S(2) * (Q - p[t]) * Y;
      gp[t] += g;
    }
    gp[T - 1] -= S(2) * tr;
    gp[T - 2] += S(2) * pm * (paper ? Ssum + F : Ssum);
    if (orth) gp[T - 2] += S(2) * Q * X;
  }
  return loss;
}

template <typename S>
S loss_grad_t(const Dims& dm, const S* theta, S* grad) {
  const int d = dm.d, H = dm.H, tm = dm.tmax;
  const Index nC = dm.factored ? 2 * Index(H) * d : Index(d) * d;
  using Map = Eigen::Map<const SMat<S>>;
  SMat<S> C(d, d);
  if (dm.factored) {
    Map A(theta, H, d), B(theta + Index(H) * d, H, d);
    C.noalias() = B.transpose() * A;
  } else {
    C = Map(theta, d, d);
  }
  // the C-dependent sums, shared by every T (no squaredNorm: it would conjugate)
  const SVec<S> R = C.rowwise().sum();
  const S Ssum = (R.array() * R.array()).sum(), F = (C.array() * C.array()).sum(), tr = C.trace();
  S X(0), Y(0);
  const bool orth = dm.context == ORTHOGONAL;
  SVec<S> diag = C.diagonal(), partner = SVec<S>::Zero(d);
  if (orth)
    for (int i = 0; i < d; ++i) {
      const S c = C(i, i ^ 1);
      partner(i) = c;
      X += R(i) * c;
      Y += c * c;
    }
  S Foff(0);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j)
      if (j != i && !(orth && j == (i ^ 1))) Foff += C(i, j) * C(i, j);
  CSums<S> cs{Ssum, F, tr, X, Y, Foff, diag.data(), R.data(), partner.data()};
  const S* P = theta + nC;
  CGrad<S> k;
  if (grad) std::fill(grad, grad + dm.P, S(0));
  S loss(0);
  for (int T = 2; T <= tm; ++T) {
    const Index row = Index(T - 2) * tm;
    loss += row_loss_t<S>(dm.context, d, cs, P + row, T, grad ? &k : nullptr,
                          grad ? grad + nC + row : nullptr);
  }
  SMat<S> gC;
  if (grad) {
    gC = k.kC * C;
    gC.colwise() += k.kR * R;
    gC.diagonal().array() -= k.kI;
    if (dm.context == ORTHOGONAL)
      for (int i = 0; i < d; ++i) {
        const S c = C(i, i ^ 1);
        gC.row(i).array() += k.kX * c;
        gC(i, i ^ 1) += k.kX * R(i) + k.kY * c;
      }
  }
  if (grad) {
    if (dm.factored) {
      Map A(theta, H, d), B(theta + Index(H) * d, H, d);
      Eigen::Map<SMat<S>>(grad, H, d).noalias() = B * gC;                         // B dl/dC
      Eigen::Map<SMat<S>>(grad + Index(H) * d, H, d).noalias() = A * gC.transpose();  // A (dl/dC)^T
    } else {
      Eigen::Map<SMat<S>>(grad, d, d) = gC;
    }
  }
  return loss;
}

using Cplx = std::complex<double>;
// The complex step: grad(theta + i h u) = grad(theta) + i h H u + O(h^2) in the real part only,
// so Im(grad)/h is H u to rounding, for any h small enough (no cancellation).
constexpr double kStep = 1e-30;

class Operator : public HessianOperator {
 public:
  explicit Operator(const Dims& dm) : dm_(dm), z_(dm.P), g_(dm.P) {}
  void prepare(const double* theta) override {
    for (Index k = 0; k < dm_.P; ++k) z_[k] = Cplx(theta[k], 0.0);
  }
  void apply(const double* u, double* out) override {
    for (Index k = 0; k < dm_.P; ++k) z_[k].imag(kStep * u[k]);
    loss_grad_t<Cplx>(dm_, z_.data(), g_.data());
    for (Index k = 0; k < dm_.P; ++k) out[k] = g_[k].imag() / kStep;
  }

 private:
  Dims dm_;
  std::vector<Cplx> z_, g_;
};

}  // namespace

Dims::Dims(int context_, int d_, int H_, int tmax_, bool factored_)
    : context(context_), d(d_), H(H_), tmax(tmax_), factored(factored_) {
  if (context != UNITARY && context != ORTHOGONAL && context != UNITARY_PAPER)
    throw std::invalid_argument("context must be 0 (unitary), 1 (orthogonal) or 2 (unitary_paper)");
  if (d < 1 || H < 1) throw std::invalid_argument("d and H must be positive");
  if (tmax < 2) throw std::invalid_argument("tmax must be at least 2 (the loss sums T = 2..tmax)");
  if (context == ORTHOGONAL && d % 2 != 0)
    throw std::invalid_argument("orthogonal contexts pair conjugate eigenvalues: d must be even");
  P = (factored ? 2 * Index(H) * d : Index(d) * d) + Index(tmax) * tmax;
}

double loss_grad(const Dims& dm, const double* theta, double* grad) {
  return loss_grad_t<double>(dm, theta, grad);
}

std::unique_ptr<HessianOperator> hessian_operator(const Dims& dm) {
  return std::make_unique<Operator>(dm);
}

}  // namespace fastattn::autoregressive

namespace fastattn {

std::string AutoRegressive::name() const {
  static const char* names[] = {"unitary", "orthogonal", "unitary_paper"};
  return std::string("autoregressive(") + names[dm_.context] + ", d=" + std::to_string(dm_.d) +
         ", H=" + std::to_string(dm_.H) + ", tmax=" + std::to_string(dm_.tmax) +
         (dm_.factored ? ", A,B,P)" : ", C,P)");
}

void AutoRegressive::hessian(const double* theta, double* out) const {
  const Index P = dm_.P;
  auto op = autoregressive::hessian_operator(dm_);
  op->prepare(theta);
  Vec e = Vec::Zero(P), col(P);
  for (Index k = 0; k < P; ++k) {
    e[k] = 1.0;
    op->apply(e.data(), col.data());
    e[k] = 0.0;
    for (Index r = 0; r < P; ++r) out[r * P + k] = col[r];
  }
  // symmetric to rounding; make it exactly so
  RMap H(out, P, P);
  H = (0.5 * (H + H.transpose())).eval();
}

}  // namespace fastattn
