// "auto": the policy that picks the method as the flow goes, measured in gradient-evaluation units
// (evaluations + the objective's cost hint per HVP / dense Rodas4 step: a fixed model, so a batch run
// switches exactly as its single runs do). See docs/theory.md section 4.
//   - dense path (the objective has a dense Hessian and P <= kAutoMaxDenseP): Dormand-Prince,
//     switching to Rodas4 while the flow is stiff for the explicit method (AutoDense);
//   - large path (otherwise): Dormand-Prince and the stabilized method alternate, with Hessian-free
//     Rodas4 episodes where the flow has settled (when the objective has a Hessian operator).
#include <algorithm>
#include <cmath>

#include "integrators/runner.h"

namespace fastattn {

namespace {

// Largest P for which "auto" uses the dense-Hessian Rosenbrock method (LU cost ~P^3).
constexpr Index kAutoMaxDenseP = 2000;
// A stabilized step with this many stages or more (h rho >~ 300) counts as "settled".
constexpr int kStabHandOverS = 30;

// Largest |eigenvalue| of the symmetric Hs by warm-started power iteration.
double spectral_radius(const RMat& Hs, Vec& u, int iters) {
  const Index P = Hs.rows();
  if (u.size() != P || u.norm() == 0) {
    u.resize(P);
    for (Index i = 0; i < P; ++i) u(i) = 1.0 + 0.1 * std::sin(double(i) + 1.0);
  }
  u.normalize();
  double rho = 0;
  Vec z(P);
  for (int it = 0; it < iters; ++it) {
    z.noalias() = Hs * u;
    rho = z.norm();
    if (!(rho > 0) || !std::isfinite(rho)) return 0.0;
    u = z / rho;
  }
  return rho;
}

// LSODA-like switching between Dormand-Prince and dense Rodas4. RK45 -> Rodas4 once Hairer's
// stiffness test has held for 15 steps and the explicit method has spent the back-off budget since
// the last try; a Rodas4 episode starts with a trial of enough steps for h to outgrow the cost
// ratio, and goes back when its cost per unit time stays above Dormand-Prince's at its stability
// bound 3.3 / rho(J).
class AutoDense : public AdaptivePolicy {
 public:
  // cj: a Rosenbrock step's cost beyond its 6 evaluations (the Hessian and its factorisation)
  explicit AutoDense(double cj) : cj_(cj), trial_(trial_len()), backoff_(4.0 * trial_ * (6.0 + cj)) {}

  void hessian_ready(const RMat& hessian) override { rho_j_ = 0.5 * spectral_radius(hessian, pu_, 6); }

  bool accepted(AdaptiveState& s) override {
    const double step_cost = s.rosenbrock ? 6.0 + cj_ : 6.0;
    if (!s.rosenbrock) {
      rk_spent_ += step_cost;
      if (s.stiff_count >= 15 && rk_spent_ >= backoff_) {
        s.rosenbrock = true;
        s.have_hessian = false;
        ros_steps_ = ros_worse_ = 0;
        trial_ = trial_len();
        ros_spent_ = 0;
      }
      return false;
    }
    ros_spent_ += step_cost;
    ++ros_steps_;
    // Dormand-Prince would step min(h, 3.3 / rho(J)) at 6 evaluations (stability bound on the
    // negative real axis); compare costs per unit time.
    const double h_rk = rho_j_ > 0 ? std::min(s.h, 3.3 / rho_j_) : s.h;
    const bool worse = step_cost / s.h > 6.0 / h_rk;
    ros_worse_ = worse ? ros_worse_ + 1 : 0;
    // during the trial the step must keep growing (x1.5 per step) while still worse
    const bool stalled = ros_steps_ <= trial_ && worse && s.h < 1.5 * s.hs;
    if (stalled || (ros_steps_ == trial_ && worse) || (ros_steps_ > trial_ && ros_worse_ >= 3))
      switch_to_rk(s, ros_steps_ <= trial_ + 3);
    return false;
  }

  void rejected(const AdaptiveState& s) override {
    (s.rosenbrock ? ros_spent_ : rk_spent_) += s.rosenbrock ? 6.0 + cj_ : 6.0;
  }

  // a stiff method in trouble near a saddle: let the explicit method take over
  bool rescue(AdaptiveState& s) override {
    if (!s.rosenbrock) return false;
    switch_to_rk(s, true);
    s.h = std::max(s.h, 1e-6 * std::max(1.0, s.t));
    return true;
  }

 private:
  const double cj_;
  int trial_;
  // The first trial only after the explicit method has spent 4x a trial's cost (so a failed
  // trial costs at most ~25% on a short run); a failed trial multiplies the wait by 4, 8, ...
  double backoff_, backoff_next_ = 4.0, rk_spent_ = 0, ros_spent_ = 0, rho_j_ = 0;
  int ros_steps_ = 0, ros_worse_ = 0;
  Vec pu_;  // power-iteration vector

  // trial: enough Rosenbrock steps for h to outgrow the cost ratio growing x2 per step
  int trial_len() const {
    return 2 + int(std::ceil(std::log(std::max(1.0, (6.0 + cj_) / 6.0)) / std::log(2.0)));
  }
  void switch_to_rk(AdaptiveState& s, bool failed) {
    s.rosenbrock = false;
    s.have_hessian = false;
    // a failed trial: retry only after the explicit method has spent 4x (8x, ...) its cost
    if (failed) { backoff_ = backoff_next_ * std::max(ros_spent_, 6.0 * 50); backoff_next_ *= 2; }
    else { backoff_ = 0; backoff_next_ = 4.0; }
    rk_spent_ = 0;
    s.stiff_count = s.nonstiff_count = 0;
    if (rho_j_ > 0) s.h = std::min(s.h, 3.0 / rho_j_);
  }
};

// A Dormand-Prince phase of the large path: hands back once stability-limited (15 steps).
class UntilStiff : public AdaptivePolicy {
 public:
  bool accepted(AdaptiveState& s) override { return !s.rosenbrock && s.stiff_count >= 15; }
};

// A Hessian-free Rodas4 episode begun by the stabilized method: hands the run back once, after
// 4 steps, its work per unit time over the last 3 exceeds the stabilized method's (rate_limit).
class WhileCheaper : public AdaptivePolicy {
 public:
  WhileCheaper(double rate_limit, double work, double t) : limit_(rate_limit), recent_(3, work, t) {}
  bool accepted(AdaptiveState& s) override {
    recent_.add(s.work, s.t);
    return ++steps_ >= 4 && recent_.rate() > limit_;
  }

 private:
  double limit_;
  WorkRate recent_;
  int steps_ = 0;
};

// The stabilized phases of the large path add two hand-overs:
//  - back to Dormand-Prince after 10 steps in a row within its stability interval, h rho < 3.3:
//    there it steps as far for 6 evaluations, and its order 5 usually farther;
//  - a Hessian-free Rodas4 episode after 10 steps in a row with kStabHandOverS stages or more
//    (h rho >~ 300: typically the flow has settled, and its stiff components, damped only by
//    |R| <= 0.95 a step, keep the error estimate up). The episode hands the run back when its
//    work per unit time exceeds this method's over those 10 steps; the next one waits until this
//    method has done 4x the last episode's work (x2 per episode shorter than 10 steps).
class StabilizedPhase : public StabilizedPolicy {
 public:
  StabilizedPhase(Runner& runner, bool episodes) : runner_(runner), episodes_(episodes) {}

  void started(double work, double t) override { recent_ = WorkRate(10, work, t); }

  bool accepted(Vec& y, StabilizedState& s) override {
    recent_.add(runner_.work_done(), s.t);
    inside_dp_ = s.hs * s.rho < 3.3 ? inside_dp_ + 1 : 0;
    if (inside_dp_ >= 10) {
      s.h = std::min(s.h, 3.3 / s.rho);
      return true;
    }
    settled_ = s.stages >= kStabHandOverS ? settled_ + 1 : 0;
    if (!episodes_ || settled_ < 10 || runner_.work_done() < wait_until_) return false;
    const double rate = recent_.rate();
    const double w0 = runner_.work_done();
    const long long n0 = runner_.result().n_steps;
    WhileCheaper policy(rate, w0, s.t);
    const Handover back = runner_.run_adaptive(y, {/*rosenbrock=*/true, /*krylov=*/true, s.t, s.h, &policy});
    if (runner_.result().status != "running") return true;
    const double w1 = runner_.work_done();
    wait_mult_ = runner_.result().n_steps - n0 < 10 ? 2 * wait_mult_ : 4;
    wait_until_ = w1 + wait_mult_ * (w1 - w0);
    s.t = back.t;
    s.h = back.h;
    s.refresh_rho = true;
    settled_ = 0;
    recent_ = WorkRate(10, w1, s.t);
    return false;
  }

 private:
  Runner& runner_;
  bool episodes_;
  WorkRate recent_{10, 0, 0};
  int settled_ = 0, inside_dp_ = 0;
  double wait_until_ = 0, wait_mult_ = 4;
};

// The large path: Dormand-Prince and the stabilized method (with its Rodas4 episodes) alternate,
// each handing the run to the other (Dormand-Prince once stability-limited; stabilized after 10
// steps within Dormand-Prince's stability interval), each phase starting from the previous one's
// t and h. See docs/theory.md for why there is no back-off between them.
void run_large(Runner& runner, Vec& y) {
  const bool episodes = runner.objective().hessian_operator() != nullptr;
  Handover at;
  for (bool stab = false;; stab = !stab) {
    if (stab) {
      StabilizedPhase policy(runner, episodes);
      at = runner.run_stabilized(y, at.t, at.h, &policy);
    } else {
      UntilStiff policy;
      at = runner.run_adaptive(y, {/*rosenbrock=*/false, /*krylov=*/false, at.t, at.h, &policy});
    }
    if (runner.result().status != "running") return;
  }
}

}  // namespace

void run_auto(Runner& runner, Vec& y) {
  const Objective& obj = runner.objective();
  if (obj.has_hessian() && runner.size() <= kAutoMaxDenseP) {
    AutoDense policy(runner.cost().dense_step);
    runner.run_adaptive(y, {/*rosenbrock=*/false, /*krylov=*/false, 0, 0, &policy});
  } else {
    run_large(runner, y);
  }
}

}  // namespace fastattn
