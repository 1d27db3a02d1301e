#include "objectives/induction_three_param.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "objectives/complex_step.h"

namespace fastattn::induction {

namespace {

using complex_step::Cplx;
using complex_step::real_part;

// sigmoid(x) and 1 - sigmoid(x) = sigmoid(-x), each without cancellation or overflow.
template <class T>
T sigmoid(T x) {
  if (real_part(x) >= 0) return 1.0 / (1.0 + std::exp(-x));
  const T e = std::exp(x);
  return e / (1.0 + e);
}

}  // namespace

ThreeParam::ThreeParam(int N, bool uniform_query, bool inclusive)
    : N_(N), uniform_(uniform_query), inclusive_(inclusive) {
  if (N < 1) throw std::invalid_argument("N must be >= 1 (item-label pairs)");
}

std::string ThreeParam::name() const {
  return "induction_three_param(N=" + std::to_string(N_) + ", query=" + (uniform_ ? "uniform" : "last") +
         ", mask=" + (inclusive_ ? "inclusive" : "strict") + ")";
}

template <class T>
T ThreeParam::closed_form(const T* th, T* grad) const {
  const T a = th[0], b = th[1], g = th[2];
  const double F = 2.0 * N_ - 1.0;
  // w: the final label's layer-1 weight on its own item; w1 = 1 - w (N = 1: the label's only key)
  const T w = N_ == 1 ? T(1.0) : sigmoid<T>(a - std::log(2.0 * N_ - 2.0));
  const T w1 = N_ == 1 ? T(0.0) : sigmoid<T>(std::log(2.0 * N_ - 2.0) - a);
  const T x = b * w - std::log(F);
  const T p = sigmoid<T>(x), p1 = sigmoid<T>(-x);  // layer-2 weight on the target label, and 1 - p
  const T r = 1.0 - g * p;
  const T loss = r * r + g * g * p1 * p1 / F;
  if (grad) {
    const T c = g * r + g * g * p1 / F;  // -dL/dp / 2
    const T dbeta = -2.0 * c * p * p1 * w;
    grad[0] = dbeta * b * w1;
    grad[1] = dbeta;
    grad[2] = -2.0 * p * r + 2.0 * g * p1 * p1 / F;
  }
  return loss;
}

double ThreeParam::loss_grad_query(const double* th, int q, double* grad) const {
  if (q < 1 || q > N_) throw std::invalid_argument("query index q must be in 1..N");
  return query_form(th, q, grad);
}

template <class T>
T ThreeParam::query_form(const T* th, int q, T* grad) const {
  const T a = th[0], b = th[1], g = th[2];
  const int L = 2 * N_ + 1, item = 2 * q - 1, label = 2 * q;  // 1-based positions
  const int n_keys = inclusive_ ? L : L - 1;                   // the query's layer-2 keys 1..n_keys
  // t_j = T[j, item] (layer-1 weight of row j on the queried item) and dt_j/dalpha
  std::vector<T> t(n_keys + 1, 0.0), dt(n_keys + 1, 0.0), P(n_keys + 1), Q(n_keys + 1);
  for (int j = 1; j <= n_keys; ++j) {
    const int cnt = inclusive_ ? j : j - 1;  // row j's layer-1 keys 1..cnt
    if (j == L) {                             // the query row (inclusive): uniform, and G1[L, .] also
      t[j] = 2.0 / cnt;                       // picks T[L, L]: the query duplicates the item
      continue;
    }
    if (cnt < item) continue;
    if (j % 2 == 1) {  // item rows: no score, uniform attention
      t[j] = 1.0 / cnt;
      continue;
    }
    // label row j: score alpha on key j-1 (its item), 0 on the other cnt-1 keys
    const double lo = cnt > 1 ? std::log(cnt - 1.0) : -INFINITY;
    const T w = cnt > 1 ? sigmoid<T>(a - lo) : T(1.0), w1 = cnt > 1 ? sigmoid<T>(lo - a) : T(0.0);
    if (j == label) {
      t[j] = w;
      dt[j] = w * w1;
    } else {
      t[j] = w1 / double(cnt - 1);
      dt[j] = -w * w1 / double(cnt - 1);
    }
  }
  double m = -INFINITY;  // the softmax shift (real: any shift gives the same softmax)
  for (int j = 1; j <= n_keys; ++j) m = std::max(m, real_part(P[j] = b * t[j]));
  T z = 0.0;
  for (int j = 1; j <= n_keys; ++j) z += (Q[j] = std::exp(P[j] - m));
  T sq = 0.0;
  for (int j = 1; j <= n_keys; ++j) sq += (Q[j] /= z) * Q[j];
  const T qL = inclusive_ ? Q[L] : T(0.0);
  const T A = sq + 2.0 * Q[item] * qL;  // Q^T G1 Q
  const T loss = g * g * A - 2.0 * g * Q[label] + 1.0;
  if (grad) {
    // gQ_j = dL/dQ_j; dP = Q (gQ - Q.gQ)
    auto gQ = [&](int j) {
      T v = 2.0 * g * g * Q[j];
      if (j == item) v += 2.0 * g * g * qL;
      if (inclusive_ && j == L) v += 2.0 * g * g * Q[item];
      if (j == label) v -= 2.0 * g;
      return v;
    };
    T qg = 0.0;
    for (int j = 1; j <= n_keys; ++j) qg += Q[j] * gQ(j);
    T da = 0.0, db = 0.0;
    for (int j = 1; j <= n_keys; ++j) {
      const T dP = Q[j] * (gQ(j) - qg);
      db += dP * t[j];
      da += dP * dt[j];
    }
    grad[0] = b * da;
    grad[1] = db;
    grad[2] = 2.0 * g * A - 2.0 * Q[label];
  }
  return loss;
}

double ThreeParam::loss_grad(const double* th, double* grad) const { return evaluate(th, grad); }

template <class T>
T ThreeParam::evaluate(const T* th, T* grad) const {
  if (!uniform_ && !inclusive_) return closed_form(th, grad);
  if (!uniform_) return query_form(th, N_, grad);
  T loss = 0.0, gq[3];
  if (grad) grad[0] = grad[1] = grad[2] = 0.0;
  for (int q = 1; q <= N_; ++q) {
    loss += query_form(th, q, grad ? gq : nullptr);
    if (grad)
      for (int k = 0; k < 3; ++k) grad[k] += gq[k];
  }
  if (grad)
    for (int k = 0; k < 3; ++k) grad[k] /= double(N_);
  return loss / double(N_);
}

complex_step::ComplexGradient ThreeParam::complex_gradient() const {
  return [this](const Cplx* th, Cplx* grad) { evaluate(th, grad); };
}

void ThreeParam::hessian(const double* theta, double* out) const {
  complex_step::hessian(complex_gradient(), 3, theta, out);
}

std::unique_ptr<HessianOperator> ThreeParam::hessian_operator() const {
  return std::make_unique<complex_step::Operator>(complex_gradient(), 3);
}

}  // namespace fastattn::induction
