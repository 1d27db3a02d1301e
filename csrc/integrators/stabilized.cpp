// "stabilized": an order-4 stabilized explicit Runge-Kutta method (ROCK4-type).
#include "integrators/runner.h"
#include "integrators/stabilized_tables.h"

#include <algorithm>
#include <cmath>

namespace fastattn {

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
void Runner::run_stabilized(Vec& y, bool in_auto, double t0, double h_start) {
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
