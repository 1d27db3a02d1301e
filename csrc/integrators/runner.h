// One model's gradient flow d theta/dt = f(theta) = -1/2 grad L(theta) over an Objective: the state
// the integrators share (records, stops, budgets, interrupts, work accounting) and the integrators,
// one file each: explicit.cpp (euler, rk4), adaptive.cpp (Dormand-Prince, Rodas4), krylov.cpp
// (Rodas4's stage systems by MINRES), stabilized.cpp, auto.cpp ("auto"'s policy). They see the
// model only through the Objective. See docs/theory.md section 4.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "eigen_types.h"
#include "integrators/options.h"
#include "objective.h"

namespace fastattn {

// MINRES: stop when the weighted RMS norm (the step controller's) of the residual is below this
// fraction of the error tolerance; at most kKrylovMaxIt iterations (else the step is rejected).
constexpr double kKrylovTol = 1e-2;
constexpr int kKrylovMaxIt = 1000;

// A record interpolated through the accepted states: at most this many local error tolerances
// between the cubic and the quadratic interpolant (Runner::history_fits).
constexpr double kHistoryFit = 100;

// Wall clock of one integrate call and its interrupt polling: `poll_signals` (set by the bindings:
// Python's pending signals) is asked at most every 0.2 s; once it says yes, every later poll does.
struct Interrupt {
  std::function<bool()> poll_signals;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last = start;
  bool hit = false;
  bool poll() {
    if (hit) return true;
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() < 0.2) return false;
    last = now;
    hit = poll_signals && poll_signals();
    return hit;
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Progress of the running model (time reached, loss, evaluations), set by the bindings (a
  // terminal's progress line); called at most every 0.5 s.
  std::function<void(double, double, long long)> report;
  std::chrono::steady_clock::time_point last_report = start;
  void progress(double t, double loss, long long n_evals) {
    if (!report) return;
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_report).count() < 0.5) return;
    last_report = now;
    report(t, loss, n_evals);
  }
};

// Thrown by an objective (a Python one, on KeyboardInterrupt) to stop the run as "interrupted".
struct Interrupted {};

inline bool all_finite(const Vec& x) { return x.allFinite(); }

// A fixed-step method (GD, rk4) has diverged when a step's state, field or loss is not finite or
// the loss exceeds this multiple of the initial loss: the sampled trainers' rule
// (fastattn.training.trainer.DIVERGENCE_FACTOR), so every method stops a blow-up the same way.
constexpr double kDivergenceFactor = 1e8;

// Work per unit time over the last n accepted steps ("auto" compares its methods by it).
class WorkRate {
 public:
  WorkRate(size_t n, double work, double t) : n_(n), marks_{{work, t}} {}
  void add(double work, double t) {
    marks_.emplace_back(work, t);
    if (marks_.size() > n_ + 1) marks_.pop_front();
  }
  double rate() const {
    return (marks_.back().first - marks_.front().first) / (marks_.back().second - marks_.front().second);
  }

 private:
  size_t n_;
  std::deque<std::pair<double, double>> marks_;  // (work done, t)
};

// How an accepted step records the grid times strictly inside it (Runner::accept). Off: the step
// was shortened to end on the next one. On: at the cubic Hermite interpolant of the step's ends plus
// corr * s^2 (1 - s)^2, s the fraction of the step (Dormand-Prince's order-4 dense output; null:
// plain Hermite), or, with `history`, at the cubic through the last three accepted states and the
// step's end (Runner::history_fits); the loss is evaluated there (counted in n_evals).
struct RecordInterp {
  bool on = false;
  const Vec* corr = nullptr;
  bool history = false;
};

// Where a phase of "auto" gave the run back (status still "running"): its time and next step.
struct Handover {
  double t = 0, h = 0;
};

// The adaptive loop's state after a step, which a supervising policy reads and may change.
struct AdaptiveState {
  double t = 0, h = 0;      // time reached, next step
  double hs = 0;            // the step just taken (or rejected)
  double work = 0;          // Runner::work_done() after it
  bool rosenbrock = false;  // the method: Rodas4 (true) or Dormand-Prince
  bool have_hessian = false;  // false: the next Rodas4 step prepares the Hessian afresh
  // Hairer's DOPRI5 stiffness test: Dormand-Prince steps in a row at its stability limit
  // (h rho(J) > 3.25; 6 steps below it reset the count)
  int stiff_count = 0, nonstiff_count = 0;
};

// Hooks of the adaptive loop (adaptive.cpp) for a policy that supervises it ("auto", auto.cpp).
class AdaptivePolicy {
 public:
  virtual ~AdaptivePolicy() = default;
  // After an accepted step, its records and stop tests. True: hand the run back to the caller.
  virtual bool accepted(AdaptiveState& s) = 0;
  // Rodas4 steps need not land on record times: their records may be interpolated through the
  // accepted states (Runner::history_fits).
  virtual bool history_records() const { return false; }
};

// How the adaptive loop runs: alone (a plain method) or as a phase of "auto".
struct AdaptiveRun {
  bool rosenbrock = false;  // start with Rodas4 (else Dormand-Prince)
  bool krylov = false;      // Rodas4's stage systems by MINRES on Hessian-vector products
  double t0 = 0, h0 = 0;    // start time and first step (0: Options::h0 or a step from the state)
  AdaptivePolicy* policy = nullptr;
  // Dormand-Prince steps are not shortened to land on record times: the records inside a step are
  // interpolated by its order-4 dense output ("auto"; Rodas4 steps always land on them)
  bool interpolate_records = false;
};

// The stabilized loop's state after an accepted step, for its supervising policy.
struct StabilizedState {
  double t = 0, h = 0, hs = 0;  // time reached, next step, the step just taken
  double rho = 0;               // the current estimate of rho(J)
  int stages = 0;               // of the step just taken
  bool refresh_rho = false;     // set: estimate rho(J) afresh before the next step
};

class StabilizedPolicy {
 public:
  virtual ~StabilizedPolicy() = default;
  // The loop starts at time t, with work_done() == work.
  virtual void started(double /*work*/, double /*t*/) {}
  // Steps with h rho(J) <= this are not shortened to land on record times: the records inside them
  // are interpolated (cubic Hermite). 0: never.
  virtual double interpolation_h_rho() const { return 0; }
  // Steps above that limit need not land on record times either: their records may be interpolated
  // through the accepted states (Runner::history_fits).
  virtual bool history_records() const { return false; }
  // After an accepted step, its records and stop tests; may run another method on y from s.t,
  // and then set s.t, s.h. True: hand the run back (or stop, when the status is no longer
  // "running").
  virtual bool accepted(Vec& y, StabilizedState& s) = 0;
};

class Runner {
 public:
  // rec_loss [T], rec_params [T, P] (or null): the records, filled as the run passes o.record_times.
  Runner(const Objective& obj, const Options& o, const std::vector<double>& record_times,
         double* rec_loss, double* rec_params, Interrupt& intr)
      : obj_(obj), o_(o), rec_(record_times), rec_loss_(rec_loss), rec_params_(rec_params),
        intr_(intr) {}

  // y: working-basis parameters in, final working-basis parameters out.
  Result run(Vec& y);

  // ---- for "auto" (auto.cpp): phases of the integrators, each taking the run over at t0 with
  // step h0 and handing it back (status "running") when its policy says so.
  Handover run_adaptive(Vec& y, const AdaptiveRun& how);
  Handover run_stabilized(Vec& y, double t0, double h0, StabilizedPolicy* policy);
  const Objective& objective() const { return obj_; }
  const Result& result() const { return res_; }
  Index size() const { return P_; }
  // Work so far in gradient-evaluation units (deterministic: "auto" compares methods by it).
  double work_done() const { return double(res_.n_evals) + cost_.hvp * double(res_.n_hvp); }

 private:
  const Objective& obj_;
  const Options& o_;
  const std::vector<double>& rec_;
  double *rec_loss_, *rec_params_;
  Interrupt& intr_;
  CostHint cost_;
  Result res_;
  Vec rot_;             // a recorded state in the caller's basis
  double t_start_ = 0;  // seconds since the call started, when this model's run started
  Index P_ = 0;
  Vec f0_;  // flow field f = -1/2 grad L at the current state
  double L0_ = 0;
  double L_init_ = 0;  // the loss at the start of the run
  size_t next_rec_ = 0;
  // Hessian-free Rosenbrock: Hessian-vector products at the step's base point, the stage
  // preconditioner (null: none), MINRES buffers
  std::unique_ptr<HessianOperator> hop_;
  std::unique_ptr<StagePreconditioner> prec_;
  double prec_c_ = -1;
  Vec mr_wt_, mr_r1_, mr_r2_, mr_y_, mr_v_, mr_w_, mr_w1_, mr_w2_, mr_res_;
  // The six stage systems of one Rosenbrock step share their matrix: earlier solutions x_j and
  // their images A x_j (= b_j - final residual) seed the next solve (see stage_solve).
  std::vector<Vec> st_x_, st_ax_;
  Vec rho_u_;  // the stabilized method's power-iteration vector (one run's, kept across phases)
  std::unique_ptr<EventTracker> events_;  // null without events
  Vec rec_y_, rec_f_, ev_y0_;  // an interpolated record's state and field; a step's start (events)
  // The last three accepted states, the current one last (hist_n_ of them valid, kept while records
  // remain), for records interpolated through them (history_fits); land_: the last try did not fit.
  double hist_t_[3] = {0, 0, 0};
  Vec hist_y_[3];
  int hist_n_ = 0;
  bool land_ = false;

  // The max_evals budget counts gradient evaluations and Hessian-vector products.
  bool diverging(const Vec& y, const Vec& f, double L) const {
    return !all_finite(y) || !std::isfinite(L) || !all_finite(f) ||
           (L_init_ > 0 && L > kDivergenceFactor * L_init_);
  }
  bool over_budget() const { return o_.max_evals > 0 && res_.n_evals + res_.n_hvp >= o_.max_evals; }
  bool over_time() const { return o_.max_seconds > 0 && intr_.elapsed() - t_start_ >= o_.max_seconds; }

  // runner.cpp: evaluations, records, stops, error norm
  double eval(const Vec& y, Vec& f);
  void record(size_t j, const Vec& y, double L);
  void record_upto(double t, const Vec& y);
  bool check_stop(double t);
  bool accept(double t0, double t1, Vec& y, Vec& yn, Vec& fn, double Ln, const RecordInterp& interp = {});
  void push_history(double t, const Vec& y);
  bool may_interpolate_history() const;
  bool history_fits(double t1, const Vec& y1);
  void history_point(double t, double t1, const Vec& y1, Vec& cubic, Vec* quadratic) const;
  void record_inside(double t0, const Vec& y0, const Vec& f0, double t1, const Vec& y1, const Vec& f1,
                     const Vec* corr, double t_until, bool history = false);
  bool stop_after_rejection(double t);
  double next_target(double t, bool interpolating = false) const;
  double err_norm(const Vec& err, const Vec& y, const Vec& yn) const;
  double initial_step(const Vec& y) const;
  void finish_small_step(double t);

  // explicit.cpp
  void run_euler(Vec& y);
  void run_fixed_rk4(Vec& y);
  // krylov.cpp
  void krylov_setup();
  bool minres(const Vec& y, double c, const Vec& b, Vec& x);
  bool stage_solve(const Vec& y, double c, const Vec& b, Vec& x);
  // stabilized.cpp
  double flow_radius(const Vec& y, Vec& u, int max_iters);
};

// auto.cpp: "auto", the policy that picks the method as the flow goes.
void run_auto(Runner& runner, Vec& y);

}  // namespace fastattn
