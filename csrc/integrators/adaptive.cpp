// Adaptive one-step methods: Dormand-Prince 5(4) ("rk45") and Rodas4 ("stiff", "stiff_krylov").
#include "integrators/runner.h"

#include <algorithm>
#include <cmath>

namespace fastattn {

namespace {

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

}  // namespace

// Dormand-Prince 5(4) ("rk45") and Rodas4 ("stiff"; with how.krylov its stage systems are solved by
// MINRES on Hessian-vector products instead of a dense Hessian + factorisation: "stiff_krylov") share
// one loop: step clamping to the record grid, accept/reject, step-size control, records and stops.
// A policy (how.policy: "auto") may hand the run back after each step.
Handover Runner::run_adaptive(Vec& y, const AdaptiveRun& how) {
  // Dormand-Prince 5(4)
  static const double a21 = 1.0 / 5, a31 = 3.0 / 40, a32 = 9.0 / 40, a41 = 44.0 / 45,
                      a42 = -56.0 / 15, a43 = 32.0 / 9, a51 = 19372.0 / 6561,
                      a52 = -25360.0 / 2187, a53 = 64448.0 / 6561, a54 = -212.0 / 729,
                      a61 = 9017.0 / 3168, a62 = -355.0 / 33, a63 = 46732.0 / 5247,
                      a64 = 49.0 / 176, a65 = -5103.0 / 18656, b1 = 35.0 / 384,
                      b3 = 500.0 / 1113, b4 = 125.0 / 192, b5 = -2187.0 / 6784, b6 = 11.0 / 84,
                      e1 = 71.0 / 57600, e3 = -71.0 / 16695, e4 = 71.0 / 1920,
                      e5 = -17253.0 / 339200, e6 = 22.0 / 525, e7 = -1.0 / 40,
                      // dense output (Hairer's DOPRI5, CONTD5)
                      dd1 = -12715105075.0 / 11282082432.0, dd3 = 87487479700.0 / 32700410799.0,
                      dd4 = -10690763975.0 / 1880347072.0, dd5 = 701980252875.0 / 199316789632.0,
                      dd6 = -1453857185.0 / 822651844.0, dd7 = 69997945.0 / 29380423.0;
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
  const bool krylov = how.krylov;
  if (krylov) krylov_setup();
  AdaptivePolicy* const policy = how.policy;
  AdaptiveState s;
  bool& ros = s.rosenbrock;  // current method: Rosenbrock (true) or Dormand-Prince (false)
  bool& have_jac = s.have_hessian;
  double& t = s.t;
  double& h = s.h;
  double& hs = s.hs;
  ros = how.rosenbrock;
  t = how.t0;
  record_upto(t, y);
  if (check_stop(t)) return {};
  h = how.h0 > 0 ? how.h0 : initial_step(y);
  Vec k2(P_), k3(P_), k4(P_), k5(P_), k6(P_), k7(P_), yt(P_), yn(P_), err(P_), rhs(P_), corr(P_);
  Vec& kr1 = k7;  // Rosenbrock stage vectors reuse the RK buffers
  RMat Hs;
  Mat W;
  WSolver ws;
  bool last_rejected = false;
  double err_old = 1e-4;  // the last accepted step's error norm (Dormand-Prince PI control)
  for (;;) {
    // Rodas4 steps land on the records (a cubic Hermite through a stiff step overshoots) unless the
    // policy lets them interpolate through the accepted states
    const bool dense = how.interpolate_records && !ros;
    const bool history = ros && policy && policy->history_records() && may_interpolate_history();
    const double tt = next_target(t, dense || history);
    hs = h;
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
          hop_->prepare(y.data());
          prec_c_ = -1;
        } else {
          Hs.resize(P_, P_);
          obj_.hessian(y.data(), Hs.data());
          ++res_.n_jac;
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
    if (en <= 1.0) {
      const double t1 = clamp ? tt : t + hs;
      if (history && !history_fits(t1, yn)) continue;  // taken again, landing on the record
      if (dense) corr = hs * (dd1 * f0_ + dd3 * k3 + dd4 * k4 + dd5 * k5 + dd6 * k6 + dd7 * k7);
      if (accept(t, t1, y, yn, *fnew, Ln, {dense || history, dense ? &corr : nullptr, history})) return {};
      t = t1;
      have_jac = false;
      // Dormand-Prince: Hairer's PI control (beta = 0.04, DOPRI5): at the stability limit, where
      // the late phase of a large-D flow runs, the I controller alternates growth and rejection
      // (docs/theory.md section 4). Rosenbrock keeps the I controller (with the PI term, "auto"'s
      // former Rosenbrock trials, judged by how fast their steps grew, failed at D = 128).
      const double beta = ros ? 0.0 : 0.04;
      double fac = 0.9 * std::pow(std::max(en, 1e-10), -(q - 0.75 * beta)) * std::pow(err_old, beta);
      if (!ros) err_old = std::max(en, 1e-4);
      fac = std::min(last_rejected ? 1.0 : grow, std::max(0.2, fac));
      // a clamped step says nothing about the step the solution allows: keep h if larger
      h = clamp ? std::max(h, hs * fac) : hs * fac;
      last_rejected = false;
      record_upto(t, y);
      if (check_stop(t)) return {};
      if (!ros) {
        // DOPRI5 rule: 15 stability-limited steps make the problem stiff, 6 others reset.
        if (hlamb > 3.25) { ++s.stiff_count; s.nonstiff_count = 0; }
        else if (++s.nonstiff_count >= 6) s.stiff_count = 0;
      }
      s.work = work_done();
      if (policy && policy->accepted(s)) return {t, h};
    } else {
      ++res_.n_rejected;
      h = hs * std::max(0.1, 0.9 * std::pow(en, -q));
      last_rejected = true;
      if (stop_after_rejection(t)) return {};
    }
    if (h < 1e-14 * std::max(1.0, t)) {
      finish_small_step(t);
      return {};
    }
  }
}

}  // namespace fastattn
