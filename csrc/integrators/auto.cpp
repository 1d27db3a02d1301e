// "auto": the policy that picks the method as the flow goes, measured in gradient-evaluation units
// (evaluations + the objective's cost hint per HVP: a fixed model, so a batch run switches exactly
// as its single runs do): Dormand-Prince and the stabilized method alternate, with Hessian-free
// Rodas4 episodes where the flow has settled (when the objective has a Hessian operator). Records
// are interpolated inside the explicit steps. See docs/theory.md section 4.
#include <algorithm>
#include <cmath>
#include <deque>

#include "integrators/runner.h"

namespace fastattn {

namespace {

// A stabilized step with this many stages or more (h rho >~ 300) counts as "settled".
constexpr int kStabHandOverS = 30;
// ... or, with kStabStiffS stages or more, kStabRejected rejected steps among the last kStabWindow
// accepted ones ("stiff": the error estimate fights the stiff components, which a stabilized step
// damps only by |R| <= 0.95, not the solution's accuracy; gram19's plateau at N = 256).
constexpr int kStabRejected = 3, kStabStiffS = 10, kStabWindow = 10;
// Records are interpolated inside stabilized steps only while h rho(J) <= this (else the steps land
// on them): at D = 4 (separate, H = D, N = 64), Hermite through steps with h rho in the hundreds put
// records 1e-3 off the trajectory, 50x the methods' global error.
constexpr double kInterpHRho = 10.0;

// A Dormand-Prince phase: hands back once stability-limited (15 steps).
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
  bool history_records() const override { return true; }

 private:
  double limit_;
  WorkRate recent_;
  int steps_ = 0;
};

// The stabilized phases add two hand-overs:
//  - back to Dormand-Prince after 10 steps in a row within its stability interval, h rho < 3.3:
//    there it steps as far for 6 evaluations, and its order 5 usually farther;
//  - a Hessian-free Rodas4 episode after 10 steps in a row with kStabHandOverS stages or more
//    (h rho >~ 300: typically the flow has settled, and its stiff components, damped only by
//    |R| <= 0.95 a step, keep the error estimate up), or after kStabWindow steps in a row with
//    kStabStiffS stages or more of which kStabRejected were rejected (the same fight at smaller
//    h rho: the steps stay short while a Rodas4 step, L-stable, would take the flow far). The
//    episode hands the run back when its work per unit time exceeds this method's over the last
//    10 steps; the next one waits until this method has done 4x the last episode's work (x2 per
//    episode shorter than 10 steps).
class StabilizedPhase : public StabilizedPolicy {
 public:
  StabilizedPhase(Runner& runner, bool episodes) : runner_(runner), episodes_(episodes) {}

  void started(double work, double t) override {
    recent_ = WorkRate(10, work, t);
    rejected_.assign(1, runner_.result().n_rejected);
  }
  double interpolation_h_rho() const override { return kInterpHRho; }
  bool history_records() const override { return true; }

  bool accepted(Vec& y, StabilizedState& s) override {
    recent_.add(runner_.work_done(), s.t);
    inside_dp_ = s.hs * s.rho < 3.3 ? inside_dp_ + 1 : 0;
    if (inside_dp_ >= 10) {
      s.h = std::min(s.h, 3.3 / s.rho);
      return true;
    }
    settled_ = s.stages >= kStabHandOverS ? settled_ + 1 : 0;
    rejected_.push_back(runner_.result().n_rejected);
    if (int(rejected_.size()) > kStabWindow + 1) rejected_.pop_front();
    stiff_ = s.stages >= kStabStiffS ? stiff_ + 1 : 0;
    const bool rejecting = stiff_ >= kStabWindow && int(rejected_.size()) == kStabWindow + 1 &&
                           rejected_.back() - rejected_.front() >= kStabRejected;
    if (!episodes_ || (settled_ < 10 && !rejecting) || runner_.work_done() < wait_until_) return false;
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
    settled_ = stiff_ = 0;
    recent_ = WorkRate(10, w1, s.t);
    rejected_.assign(1, runner_.result().n_rejected);
    return false;
  }

 private:
  Runner& runner_;
  bool episodes_;
  WorkRate recent_{10, 0, 0};
  std::deque<long long> rejected_;  // n_rejected after each of the last kStabWindow accepted steps and before
  int settled_ = 0, stiff_ = 0, inside_dp_ = 0;
  double wait_until_ = 0, wait_mult_ = 4;
};

}  // namespace

// Dormand-Prince and the stabilized method (with its Rodas4 episodes) alternate, each handing the
// run to the other (Dormand-Prince once stability-limited; stabilized after 10 steps within
// Dormand-Prince's stability interval), each phase starting from the previous one's t and h. See
// docs/theory.md for why there is no back-off between them. The explicit steps are not shortened to
// land on the record times: the records inside them are interpolated.
void run_auto(Runner& runner, Vec& y) {
  const bool episodes = runner.objective().hessian_operator() != nullptr;
  Handover at;
  for (bool stab = false;; stab = !stab) {
    if (stab) {
      StabilizedPhase policy(runner, episodes);
      at = runner.run_stabilized(y, at.t, at.h, &policy);
    } else {
      UntilStiff policy;
      at = runner.run_adaptive(y, {/*rosenbrock=*/false, /*krylov=*/false, at.t, at.h, &policy,
                                   /*interpolate_records=*/true});
    }
    if (runner.result().status != "running") return;
  }
}

}  // namespace fastattn
