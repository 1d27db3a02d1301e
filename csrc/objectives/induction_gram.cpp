#include "objectives/induction_gram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

// Row i of T: base[i] on each of its keys 0..n_i-1, plus delta[e] on the stored entries e of row i
// with col < n_i (delta = 0 on the others).
struct Attention {
  std::vector<double> base, delta;
};

}  // namespace

double Gram19::sequence(int s, const double* th, double* grad) const {
  const int L = L_, r = L - 1, tau = target_[s];
  const std::vector<int>& ptr = ptr_[s];
  const std::vector<int>& col = col_[s];
  const std::vector<double>&g1v = g1_[s], &g2v = g2_[s], &gmv = gm_[s];
  const double a1 = th[0], a2 = th[1], a3 = th[2];
  const double* b = th + 3;  // b[0] = beta1 ... b[11] = beta12
  const double* g = th + 15;
  auto n_keys = [&](int i) { return inclusive_ ? i + 1 : i; };

  // ---- layer 1: T (base + sparse corrections)
  Attention T{std::vector<double>(L, 0.0), std::vector<double>(col.size(), 0.0)};
  for (int i = 0; i < L; ++i) {
    const int n = n_keys(i);
    if (n == 0) continue;
    int stored = 0;
    double m = -INFINITY;
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) {
      if (col[e] >= n) continue;
      ++stored;
      m = std::max(m, T.delta[e] = a1 * g1v[e] + a2 * g2v[e] + a3 * gmv[e]);  // the score S_ik
    }
    const int plain = n - stored;  // keys with score 0
    if (plain > 0) m = std::max(m, 0.0);
    double z = plain > 0 ? plain * std::exp(-m) : 0.0;
    for (int e = ptr[i]; e < ptr[i + 1]; ++e)
      if (col[e] < n) z += (T.delta[e] = std::exp(T.delta[e] - m));
    const double base = plain > 0 ? std::exp(-m) / z : 0.0;
    T.base[i] = base;
    for (int e = ptr[i]; e < ptr[i + 1]; ++e)
      if (col[e] < n) T.delta[e] = T.delta[e] / z - base;
  }
  std::vector<double> prefix(L + 1), suffix(L + 1);
  auto T_times = [&](const Vec& v, Vec& out) {  // out = T v
    prefix[0] = 0;
    for (int k = 0; k < L; ++k) prefix[k + 1] = prefix[k] + v[k];
    for (int i = 0; i < L; ++i) {
      const int n = n_keys(i);
      double acc = T.base[i] * prefix[n];
      for (int e = ptr[i]; e < ptr[i + 1]; ++e)
        if (col[e] < n) acc += T.delta[e] * v[col[e]];
      out[i] = acc;
    }
  };
  auto Tt_times = [&](const Vec& u, Vec& out) {  // out = T^T u
    suffix[L] = 0;
    for (int i = L - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + T.base[i] * u[i];
    // key k is a key of row i iff n_i > k: i > k (strict) or i >= k (inclusive)
    for (int k = 0; k < L; ++k) out[k] = inclusive_ ? suffix[k] : suffix[k + 1];
    for (int i = 0; i < L; ++i) {
      const int n = n_keys(i);
      for (int e = ptr[i]; e < ptr[i + 1]; ++e)
        if (col[e] < n) out[col[e]] += T.delta[e] * u[i];
    }
  };
  auto G_times = [&](const std::vector<double>& gv, const Vec& v, Vec& out) {  // out = G v
    for (int i = 0; i < L; ++i) {
      double acc = 0;
      for (int e = ptr[i]; e < ptr[i + 1]; ++e) acc += gv[e] * v[col[e]];
      out[i] = acc;
    }
  };
  auto G_row = [&](const std::vector<double>& gv, int i, Vec& out) {  // out = G[i, :] (= G[:, i])
    out.setZero();
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) out[col[e]] = gv[e];
  };

  // ---- layer 2, query row only
  Vec t = Vec::Zero(L);
  {
    const int n = n_keys(r);
    for (int k = 0; k < n; ++k) t[k] = T.base[r];
    for (int e = ptr[r]; e < ptr[r + 1]; ++e)
      if (col[e] < n) t[col[e]] += T.delta[e];
  }
  Vec q1(L), q2(L), qm(L), u1(L), u2(L), um(L);
  G_row(g1v, r, q1);
  G_row(g2v, r, q2);
  G_row(gmv, r, qm);
  G_times(g1v, t, u1);
  G_times(g2v, t, u2);
  G_times(gmv, t, um);
  const Vec h = b[0] * q1 + b[2] * q2 + b[3] * qm + b[6] * u1 + b[8] * u2 + b[9] * um;
  const Vec k = b[1] * q1 + b[4] * q2 + b[5] * qm + b[7] * u1 + b[10] * u2 + b[11] * um;
  Vec Tk(L);
  T_times(k, Tk);
  Vec Q = h + Tk;
  {
    const int n = n_keys(r);
    const double m = Q.head(n).maxCoeff();
    double z = 0;
    for (int j = 0; j < n; ++j) z += (Q[j] = std::exp(Q[j] - m));
    Q.head(n) /= z;
    Q.tail(L - n).setZero();
  }
  Vec TQ(L);
  Tt_times(Q, TQ);
  Vec c = g[1] * t + g[2] * Q + g[3] * TQ;
  c[r] += g[0];
  Vec G1c(L), G1tau(L);
  G_times(g1v, c, G1c);
  G_row(g1v, tau, G1tau);
  const double loss = c.dot(G1c) - 2.0 * c.dot(G1tau) + G1tau[tau];
  if (!grad) return loss;

  // ---- adjoint
  const Vec dc = 2.0 * (G1c - G1tau);
  grad[15] = dc[r];
  grad[16] = dc.dot(t);
  grad[17] = dc.dot(Q);
  grad[18] = dc.dot(TQ);
  Vec Tdc(L);
  T_times(dc, Tdc);
  const Vec dQ = g[2] * dc + g[3] * Tdc;
  const Vec dP = (Q.array() * (dQ.array() - Q.dot(dQ))).matrix();  // Q = 0 off the mask
  Vec dk(L);
  Tt_times(dP, dk);
  grad[3] = dP.dot(q1);
  grad[5] = dP.dot(q2);
  grad[6] = dP.dot(qm);
  grad[9] = dP.dot(u1);
  grad[11] = dP.dot(u2);
  grad[12] = dP.dot(um);
  grad[4] = dk.dot(q1);
  grad[7] = dk.dot(q2);
  grad[8] = dk.dot(qm);
  grad[10] = dk.dot(u1);
  grad[13] = dk.dot(u2);
  grad[14] = dk.dot(um);
  Vec dt(L), tmp(L);
  dt = g[1] * dc;
  G_times(g1v, (b[6] * dP + b[7] * dk).eval(), tmp);
  dt += tmp;
  G_times(g2v, (b[8] * dP + b[10] * dk).eval(), tmp);
  dt += tmp;
  G_times(gmv, (b[9] * dP + b[11] * dk).eval(), tmp);
  dt += tmp;
  // dT[i, :] = g4 Q_i dc + dP_i k + [i = r] dt; dS = T (dT - <T_i, dT_i>) on the keys; only the
  // stored entries carry a Gram value, so only they reach the alpha gradient
  const double Tr_dt = t.dot(dt);
  double da1 = 0, da2 = 0, da3 = 0;
  for (int i = 0; i < L; ++i) {
    const int n = n_keys(i);
    if (n == 0) continue;
    const double mean = g[3] * Q[i] * Tdc[i] + dP[i] * Tk[i] + (i == r ? Tr_dt : 0.0);
    for (int e = ptr[i]; e < ptr[i + 1]; ++e) {
      const int j = col[e];
      if (j >= n) continue;
      const double dT = g[3] * Q[i] * dc[j] + dP[i] * k[j] + (i == r ? dt[j] : 0.0);
      const double dS = (T.base[i] + T.delta[e]) * (dT - mean);
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

double Gram19::loss_grad(const double* th, double* grad) const {
  double loss = 0, gs[kParams];
  if (grad) std::fill(grad, grad + kParams, 0.0);
  for (int s = 0; s < int(target_.size()); ++s) {
    loss += weights_[s] * sequence(s, th, grad ? gs : nullptr);
    if (grad)
      for (int p = 0; p < kParams; ++p) grad[p] += weights_[s] * gs[p];
  }
  return loss;
}

}  // namespace fastattn::induction
