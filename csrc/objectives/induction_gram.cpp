#include "objectives/induction_gram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "objectives/complex_step.h"

namespace fastattn::induction {

Gram19::Gram19(int L, std::vector<double> G1, std::vector<double> G2, std::vector<double> GM,
               std::vector<int> target, std::vector<double> weights, bool inclusive)
    : L_(L), target_(std::move(target)), weights_(std::move(weights)), inclusive_(inclusive) {
  if (L < 2) throw std::invalid_argument("L (sequence length 2N + 1) must be >= 2");
  const size_t S = target_.size(), LL = size_t(L) * L;
  if (S == 0) throw std::invalid_argument("need at least one sequence");
  if (G1.size() != S * LL || G2.size() != S * LL || GM.size() != S * LL)
    throw std::invalid_argument("G1, G2, GM must each hold S matrices L x L (S = len(target))");
  if (weights_.size() != S) throw std::invalid_argument("weights must hold one number per sequence");
  for (int tau : target_)
    if (tau < 0 || tau >= L) throw std::invalid_argument("target positions must lie in [0, L)");
  ptr_.resize(S);
  col_.resize(S);
  g1_.resize(S);
  g2_.resize(S);
  gm_.resize(S);
  for (size_t s = 0; s < S; ++s) {
    ptr_[s].assign(L + 1, 0);
    for (int i = 0; i < L; ++i) {
      for (int k = 0; k < L; ++k) {
        const size_t at = s * LL + size_t(i) * L + k;
        if (G1[at] != 0.0 || G2[at] != 0.0 || GM[at] != 0.0) {
          col_[s].push_back(k);
          g1_[s].push_back(G1[at]);
          g2_[s].push_back(G2[at]);
          gm_[s].push_back(GM[at]);
        }
      }
      ptr_[s][i + 1] = int(col_[s].size());
    }
  }
}

std::string Gram19::name() const {
  return "induction_gram19(L=" + std::to_string(L_) + ", sequences=" + std::to_string(target_.size()) +
         ", mask=" + (inclusive_ ? "inclusive" : "strict") + ")";
}

namespace {

using complex_step::Cplx;
using complex_step::real_part;

// Row i of T: base[i] on each of its keys 0..n_i-1, plus delta[e] on the stored entries e of row i
// with col < n_i (delta = 0 on the others).
template <class T>
struct Attention {
  std::vector<T> base, delta;
};

// sum_i a_i b_i without conjugation (Eigen's dot conjugates its first argument: not analytic)
template <class V>
typename V::Scalar dotu(const V& a, const V& b) {
  return a.cwiseProduct(b).sum();
}

}  // namespace

template <class T>
T Gram19::sequence(int s, const T* th, T* grad) const {
  using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  const int L = L_, r = L - 1, tau = target_[s];
  const std::vector<int>& ptr = ptr_[s];
  const std::vector<int>& col = col_[s];
  const std::vector<double>&g1v = g1_[s], &g2v = g2_[s], &gmv = gm_[s];
  const T a1 = th[0], a2 = th[1], a3 = th[2];
  const T* b = th + 3;  // b[0] = beta1 ... b[11] = beta12
  const T* g = th + 15;
  auto n_keys = [&](int i) { return inclusive_ ? i + 1 : i; };

  // ---- layer 1: T (base + sparse corrections)
  Attention<T> At{std::vector<T>(L, 0.0), std::vector<T>(col.size(), 0.0)};
  for (int i = 0; i < L; ++i) {
    const int n = n_keys(i);
    if (n == 0) continue;
    int stored = 0;
    double m = -INFINITY;  // the softmax shift (real: any shift gives the same softmax)
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) {
      if (col[e] >= n) continue;
      ++stored;
      m = std::max(m, real_part(At.delta[e] = a1 * g1v[e] + a2 * g2v[e] + a3 * gmv[e]));  // S_ik
    }
    const int plain = n - stored;  // keys with score 0
    if (plain > 0) m = std::max(m, 0.0);
    T z = plain > 0 ? T(plain * std::exp(-m)) : T(0.0);
    for (int e = ptr[i]; e < ptr[i + 1]; ++e)
      if (col[e] < n) z += (At.delta[e] = std::exp(At.delta[e] - m));
    const T base = plain > 0 ? T(std::exp(-m)) / z : T(0.0);
    At.base[i] = base;
    for (int e = ptr[i]; e < ptr[i + 1]; ++e)
      if (col[e] < n) At.delta[e] = At.delta[e] / z - base;
  }
  std::vector<T> prefix(L + 1), suffix(L + 1);
  auto T_times = [&](const VecT& v, VecT& out) {  // out = T v
    prefix[0] = 0.0;
    for (int k = 0; k < L; ++k) prefix[k + 1] = prefix[k] + v[k];
    for (int i = 0; i < L; ++i) {
      const int n = n_keys(i);
      T acc = At.base[i] * prefix[n];
      for (int e = ptr[i]; e < ptr[i + 1]; ++e)
        if (col[e] < n) acc += At.delta[e] * v[col[e]];
      out[i] = acc;
    }
  };
  auto Tt_times = [&](const VecT& u, VecT& out) {  // out = T^T u
    suffix[L] = 0.0;
    for (int i = L - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + At.base[i] * u[i];
    // key k is a key of row i iff n_i > k: i > k (strict) or i >= k (inclusive)
    for (int k = 0; k < L; ++k) out[k] = inclusive_ ? suffix[k] : suffix[k + 1];
    for (int i = 0; i < L; ++i) {
      const int n = n_keys(i);
      for (int e = ptr[i]; e < ptr[i + 1]; ++e)
        if (col[e] < n) out[col[e]] += At.delta[e] * u[i];
    }
  };
  auto G_times = [&](const std::vector<double>& gv, const VecT& v, VecT& out) {  // out = G v
    for (int i = 0; i < L; ++i) {
      T acc = 0.0;
      for (int e = ptr[i]; e < ptr[i + 1]; ++e) acc += gv[e] * v[col[e]];
      out[i] = acc;
    }
  };
  auto G_row = [&](const std::vector<double>& gv, int i, VecT& out) {  // out = G[i, :] (= G[:, i])
    out.setZero();
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) out[col[e]] = gv[e];
  };

  // ---- layer 2, query row only
  VecT t = VecT::Zero(L);
  {
    const int n = n_keys(r);
    for (int k = 0; k < n; ++k) t[k] = At.base[r];
    for (int e = ptr[r]; e < ptr[r + 1]; ++e)
      if (col[e] < n) t[col[e]] += At.delta[e];
  }
  VecT q1(L), q2(L), qm(L), u1(L), u2(L), um(L);
  G_row(g1v, r, q1);
  G_row(g2v, r, q2);
  G_row(gmv, r, qm);
  G_times(g1v, t, u1);
  G_times(g2v, t, u2);
  G_times(gmv, t, um);
  const VecT h = b[0] * q1 + b[2] * q2 + b[3] * qm + b[6] * u1 + b[8] * u2 + b[9] * um;
  const VecT k = b[1] * q1 + b[4] * q2 + b[5] * qm + b[7] * u1 + b[10] * u2 + b[11] * um;
  VecT Tk(L);
  T_times(k, Tk);
  VecT Q = h + Tk;
  {
    const int n = n_keys(r);
    const double m = Q.head(n).real().maxCoeff();
    T z = 0.0;
    for (int j = 0; j < n; ++j) z += (Q[j] = std::exp(Q[j] - m));
    Q.head(n) /= z;
    Q.tail(L - n).setZero();
  }
  VecT TQ(L);
  Tt_times(Q, TQ);
  VecT c = g[1] * t + g[2] * Q + g[3] * TQ;
  c[r] += g[0];
  VecT G1c(L), G1tau(L);
  G_times(g1v, c, G1c);
  G_row(g1v, tau, G1tau);
  const T loss = dotu(c, G1c) - 2.0 * dotu(c, G1tau) + G1tau[tau];
  if (!grad) return loss;

  // ---- adjoint
  const VecT dc = 2.0 * (G1c - G1tau);
  grad[15] = dc[r];
  grad[16] = dotu(dc, t);
  grad[17] = dotu(dc, Q);
  grad[18] = dotu(dc, TQ);
  VecT Tdc(L);
  T_times(dc, Tdc);
  const VecT dQ = g[2] * dc + g[3] * Tdc;
  const VecT dP = (Q.array() * (dQ.array() - dotu(Q, dQ))).matrix();  // Q = 0 off the mask
  VecT dk(L);
  Tt_times(dP, dk);
  grad[3] = dotu(dP, q1);
  grad[5] = dotu(dP, q2);
  grad[6] = dotu(dP, qm);
  grad[9] = dotu(dP, u1);
  grad[11] = dotu(dP, u2);
  grad[12] = dotu(dP, um);
  grad[4] = dotu(dk, q1);
  grad[7] = dotu(dk, q2);
  grad[8] = dotu(dk, qm);
  grad[10] = dotu(dk, u1);
  grad[13] = dotu(dk, u2);
  grad[14] = dotu(dk, um);
  VecT dt(L), tmp(L);
  dt = g[1] * dc;
  G_times(g1v, (b[6] * dP + b[7] * dk).eval(), tmp);
  dt += tmp;
  G_times(g2v, (b[8] * dP + b[10] * dk).eval(), tmp);
  dt += tmp;
  G_times(gmv, (b[9] * dP + b[11] * dk).eval(), tmp);
  dt += tmp;
  // dT[i, :] = g4 Q_i dc + dP_i k + [i = r] dt; dS = T (dT - <T_i, dT_i>) on the keys; only the
  // stored entries carry a Gram value, so only they reach the alpha gradient
  const T Tr_dt = dotu(t, dt);
  T da1 = 0.0, da2 = 0.0, da3 = 0.0;
  for (int i = 0; i < L; ++i) {
    const int n = n_keys(i);
    if (n == 0) continue;
    const T mean = g[3] * Q[i] * Tdc[i] + dP[i] * Tk[i] + (i == r ? Tr_dt : T(0.0));
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) {
      const int j = col[e];
      if (j >= n) continue;
      const T dT = g[3] * Q[i] * dc[j] + dP[i] * k[j] + (i == r ? dt[j] : T(0.0));
      const T dS = (At.base[i] + At.delta[e]) * (dT - mean);
      da1 += dS * g1v[e];
      da2 += dS * g2v[e];
      da3 += dS * gmv[e];
    }
  }
  grad[0] = da1;
  grad[1] = da2;
  grad[2] = da3;
  return loss;
}

double Gram19::loss_grad(const double* th, double* grad) const { return evaluate(th, grad); }

template <class T>
T Gram19::evaluate(const T* th, T* grad) const {
  T loss = 0.0, gs[kParams];
  if (grad) std::fill(grad, grad + kParams, T(0.0));
  for (int s = 0; s < int(target_.size()); ++s) {
    loss += weights_[s] * sequence(s, th, grad ? gs : nullptr);
    if (grad)
      for (int p = 0; p < kParams; ++p) grad[p] += weights_[s] * gs[p];
  }
  return loss;
}

complex_step::ComplexGradient Gram19::complex_gradient() const {
  return [this](const Cplx* th, Cplx* grad) { evaluate(th, grad); };
}

void Gram19::hessian(const double* theta, double* out) const {
  complex_step::hessian(complex_gradient(), kParams, theta, out);
}

std::unique_ptr<HessianOperator> Gram19::hessian_operator() const {
  return std::make_unique<complex_step::Operator>(complex_gradient(), kParams);
}

}  // namespace fastattn::induction
