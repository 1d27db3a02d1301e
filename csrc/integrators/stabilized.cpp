// "stabilized": an order-4 stabilized explicit Runge-Kutta method (ROCK4-type).
#include "integrators/runner.h"
#include "integrators/stabilized_tables.h"

#include <algorithm>
#include <cmath>

namespace fastattn {

// "stabilized": the stage count is the smallest with ell_s >= kStabMargin * h * rho(J)
constexpr double kStabMargin = 1.2;

// Order-4 stabilized explicit Runge-Kutta method (ROCK4-type; coefficients in stabilized_tables.h,
// built by tools/stabilized_tables.py; docs/theory.md section 4). With s evaluations a step is
// stable for h * rho(J) <= ell_s ~ 0.35 s^2, so the step is set by accuracy and the stage count by
// h * rho: where Dormand-Prince sits at its stability limit (the late phase of a large flow) this
// costs ~sqrt(h rho) instead of ~h rho evaluations, without a Hessian. A policy ("auto") may hand
// the run to another method after each accepted step.
Handover Runner::run_stabilized(Vec& y, double t0, double h0, StabilizedPolicy* policy) {
  double t = t0;
  record_upto(t, y);
  if (check_stop(t)) return {};
  double h = h0 > 0 ? h0 : initial_step(y);
  Vec prev(P_), cur(P_), nxt(P_), fc(P_), k1(P_), k2(P_), k3(P_), k4(P_), k5(P_), yn(P_),
      err(P_), fn(P_);
  // rho(J) by a nonlinear power iteration, re-estimated every 25 accepted steps (warm-started,
  // also across the phases of "auto"); the margin covers an estimate converging from below.
  double rho = flow_radius(y, rho_u_, rho_u_.size() == P_ ? 12 : 50);
  int since = 0;
  bool last_rejected = false;
  double err_old = 1e-4;
  if (policy) policy->started(work_done(), t);
  for (;;) {
    if (since >= 25) { rho = flow_radius(y, rho_u_, 12); since = 0; }
    // records are interpolated only in steps with small h rho (the policy's limit): with f's stiff
    // components (~ rho * the error) the cubic overshoots by up to ~0.15 h rho * the error
    const double interp_limit = policy ? policy->interpolation_h_rho() : 0;
    const bool hermite = interp_limit > 0 && h * rho <= interp_limit;
    const bool history = !hermite && policy && policy->history_records() && may_interpolate_history();
    const double tt = next_target(t, hermite || history);
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
      const double t1 = clamp ? tt : t + hs;
      if (history && !history_fits(t1, yn)) continue;  // taken again, landing on the record
      if (accept(t, t1, y, yn, fn, Ln, {hermite || history, nullptr, history})) return {};
      t = t1;
      ++since;
      const double fac = std::min(last_rejected ? 1.0 : 5.0,
                                  std::max(0.2, 0.9 * std::pow(std::max(en, 1e-10), -0.22) *
                                                    std::pow(err_old, 0.04)));
      err_old = std::max(en, 1e-4);
      h = clamp ? std::max(h, hs * fac) : hs * fac;
      last_rejected = false;
      record_upto(t, y);
      if (check_stop(t)) return {};
      if (policy) {
        StabilizedState st{t, h, hs, rho, s};
        if (policy->accepted(y, st)) return {st.t, st.h};
        t = st.t;
        h = st.h;
        if (st.refresh_rho) since = 25;
      }
    } else {
      ++res_.n_rejected;
      h = hs * std::max(0.1, 0.8 * std::pow(en, -0.25));
      last_rejected = true;
      if (stop_after_rejection(t)) return {};
    }
    if (h < 1e-14 * std::max(1.0, t)) {
      finish_small_step(t);
      return {};
    }
  }
}

// Spectral radius of the flow's Jacobian at y (f0_ = f(y)): power iteration on difference
// quotients (one evaluation each), until two estimates agree to 1%; u is kept for a warm start.
double Runner::flow_radius(const Vec& y, Vec& u, int max_iters) {
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

}  // namespace fastattn
