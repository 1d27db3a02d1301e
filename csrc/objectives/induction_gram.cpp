#include "objectives/induction_gram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fastattn::induction {

namespace {

// In place: x[0:n) <- softmax(x[0:n)), x[n:) <- 0 (n = 0: an empty row, all zeros).
void masked_softmax(double* x, int n, int size) {
  if (n > 0) {
    const double m = *std::max_element(x, x + n);
    double z = 0;
    for (int k = 0; k < n; ++k) z += (x[k] = std::exp(x[k] - m));
    for (int k = 0; k < n; ++k) x[k] /= z;
  }
  std::fill(x + n, x + size, 0.0);
}

}  // namespace

Gram19::Gram19(int L, std::vector<double> G1, std::vector<double> G2, std::vector<double> GM,
               std::vector<int> target, std::vector<double> weights, bool inclusive)
    : L_(L), G1_(std::move(G1)), G2_(std::move(G2)), GM_(std::move(GM)), target_(std::move(target)),
      weights_(std::move(weights)), inclusive_(inclusive) {
  if (L < 2) throw std::invalid_argument("L (sequence length 2N + 1) must be >= 2");
  const size_t S = target_.size(), LL = size_t(L) * L;
  if (S == 0) throw std::invalid_argument("need at least one sequence");
  if (G1_.size() != S * LL || G2_.size() != S * LL || GM_.size() != S * LL)
    throw std::invalid_argument("G1, G2, GM must each hold S matrices L x L (S = len(target))");
  if (weights_.size() != S) throw std::invalid_argument("weights must hold one number per sequence");
  for (int tau : target_)
    if (tau < 0 || tau >= L) throw std::invalid_argument("target positions must lie in [0, L)");
}

std::string Gram19::name() const {
  return "induction_gram19(L=" + std::to_string(L_) + ", sequences=" + std::to_string(target_.size()) +
         ", mask=" + (inclusive_ ? "inclusive" : "strict") + ")";
}

double Gram19::sequence(int s, const double* th, double* grad) const {
  const int L = L_, r = L - 1, tau = target_[s];
  const size_t off = size_t(s) * L * L;
  const CRMap G1(G1_.data() + off, L, L), G2(G2_.data() + off, L, L), GM(GM_.data() + off, L, L);
  const double a1 = th[0], a2 = th[1], a3 = th[2];
  const double* b = th + 3;  // b[0] = beta1 ... b[11] = beta12
  const double* g = th + 15;
  auto n_keys = [&](int i) { return inclusive_ ? i + 1 : i; };

  RMat T(L, L);
  for (int i = 0; i < L; ++i) {
    double* row = T.row(i).data();
    const int n = n_keys(i);
    for (int k = 0; k < n; ++k) row[k] = a1 * G1(i, k) + a2 * G2(i, k) + a3 * GM(i, k);
    masked_softmax(row, n, L);
  }
  const Vec t = T.row(r).transpose();
  const Vec g1 = G1.row(r).transpose(), g2 = G2.row(r).transpose(), gm = GM.row(r).transpose();
  const Vec u1 = G1 * t, u2 = G2 * t, um = GM * t;
  const Vec h = b[0] * g1 + b[2] * g2 + b[3] * gm + b[6] * u1 + b[8] * u2 + b[9] * um;
  const Vec k = b[1] * g1 + b[4] * g2 + b[5] * gm + b[7] * u1 + b[10] * u2 + b[11] * um;
  Vec Q = h + T * k;
  masked_softmax(Q.data(), n_keys(r), L);
  const Vec TQ = T.transpose() * Q;
  Vec c = g[1] * t + g[2] * Q + g[3] * TQ;
  c[r] += g[0];
  const Vec G1c = G1 * c;
  const double loss = c.dot(G1c) - 2.0 * c.dot(G1.col(tau)) + G1(tau, tau);
  if (!grad) return loss;

  const Vec dc = 2.0 * (G1c - G1.col(tau));
  grad[15] = dc[r];
  grad[16] = dc.dot(t);
  grad[17] = dc.dot(Q);
  grad[18] = dc.dot(TQ);
  const Vec dQ = g[2] * dc + g[3] * (T * dc);
  const Vec dP = (Q.array() * (dQ.array() - Q.dot(dQ))).matrix();  // Q = 0 off the mask
  const Vec dk = T.transpose() * dP;
  grad[3] = dP.dot(g1);
  grad[5] = dP.dot(g2);
  grad[6] = dP.dot(gm);
  grad[9] = dP.dot(u1);
  grad[11] = dP.dot(u2);
  grad[12] = dP.dot(um);
  grad[4] = dk.dot(g1);
  grad[7] = dk.dot(g2);
  grad[8] = dk.dot(gm);
  grad[10] = dk.dot(u1);
  grad[13] = dk.dot(u2);
  grad[14] = dk.dot(um);
  const Vec dt = g[1] * dc + G1 * (b[6] * dP + b[7] * dk) + G2 * (b[8] * dP + b[10] * dk) +
                 GM * (b[9] * dP + b[11] * dk);
  // dT[i, :] = g4 Q_i dc + dP_i k + [i = r] dt; dS = T (dT - <T_i, dT_i>) on the mask
  double da1 = 0, da2 = 0, da3 = 0;
  Vec dT(L);
  for (int i = 0; i < L; ++i) {
    const int n = n_keys(i);
    if (n == 0) continue;
    dT = g[3] * Q[i] * dc + dP[i] * k;
    if (i == r) dT += dt;
    const double mean = T.row(i).head(n).dot(dT.head(n));
    for (int j = 0; j < n; ++j) {
      const double dS = T(i, j) * (dT[j] - mean);
      da1 += dS * G1(i, j);
      da2 += dS * G2(i, j);
      da3 += dS * GM(i, j);
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
