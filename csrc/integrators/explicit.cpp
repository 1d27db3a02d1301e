// Fixed-step explicit methods: "euler" (gradient descent, t = 2 lr k) and classical "rk4".
#include "integrators/runner.h"

#include <algorithm>
#include <cmath>

namespace fastattn {

void Runner::run_euler(Vec& y) {
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
    if ((k & 255) == 0) intr_.progress(res_.t_final, L0_, res_.n_evals);
    yn = y + dtt * f0_;  // theta - eta grad L
    const double Ln = eval(yn, fn);
    if (diverging(yn, fn, Ln)) { res_.status = "diverged"; return; }
    if (accept(dtt * double(k), dtt * double(k + 1), y, yn, fn, Ln)) return;
  }
}

void Runner::run_fixed_rk4(Vec& y) {
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
    if (diverging(yt, fn, Ln)) { res_.status = "diverged"; res_.t_final = t; return; }
    const double t1 = (h == tt - t) ? tt : t + h;
    if (accept(t, t1, y, yt, fn, Ln)) return;
    t = t1;
    record_upto(t, y);
    if (check_stop(t)) return;
  }
}

}  // namespace fastattn
