// One model's gradient flow d theta/dt = f(theta) = -1/2 grad L(theta): the state the integrators
// share (records, stops, budgets, interrupts, work accounting) and the integrators themselves, one
// file each: explicit.cpp (euler, rk4), adaptive.cpp (Dormand-Prince, Rodas4), krylov.cpp
// (Rodas4's stage systems by MINRES), stabilized.cpp, auto.cpp. See docs/theory.md section 4.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "eigen_types.h"
#include "objective.h"

namespace fastattn {

enum Method { EULER = 0, RK4 = 1, RK45 = 2, STIFF = 3, AUTO = 5, STIFF_KRYLOV = 6, STABILIZED = 7,
              // run_adaptive's Dormand-Prince phase of "auto" above P = 2000 (see run_auto_large)
              RK45_PHASE = 100 };

// Largest P for which "auto" uses the dense-Hessian Rosenbrock method (LU cost ~P^3); above it,
// the Hessian-free one (stage systems by MINRES on Hessian-vector products).
constexpr Index kAutoMaxDenseP = 2000;
// MINRES: stop when the weighted RMS norm (the step controller's) of the residual is below this
// fraction of the error tolerance; at most kKrylovMaxIt iterations (else the step is rejected).
constexpr double kKrylovTol = 1e-2;
constexpr int kKrylovMaxIt = 1000;
// "stabilized": the stage count is the smallest with ell_s >= kStabMargin * h * rho(J)
constexpr double kStabMargin = 1.2;
constexpr int kStabHandOverS = 30;

struct Opts {
  int method;
  double t_end, lr, dt, rtol, atol, h0, target_loss, grad_tol, max_seconds;
  long long max_evals, max_steps;
  bool record_params;
};

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
};

struct Result {
  std::string status = "running";
  long long n_evals = 0, n_steps = 0, n_jac = 0, n_rejected = 0, n_hvp = 0;
  double t_final = 0;
};

inline bool all_finite(const Vec& x) { return x.allFinite(); }

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

class Runner {
 public:
  Runner(const Objective& obj, const Opts& o, const std::vector<double>& rec, double* rec_loss,
         double* rec_params, Interrupt& intr)
      : obj_(obj), o_(o), rec_(rec), rec_loss_(rec_loss), rec_params_(rec_params), intr_(intr) {}

  // y: working-basis parameters in, final working-basis parameters out.
  Result run(Vec& y);

 private:
  const Objective& obj_;
  CostHint cost_;
  const Opts& o_;
  const std::vector<double>& rec_;
  double *rec_loss_, *rec_params_;
  Interrupt& intr_;
  Result res_;
  Vec rot_;             // a recorded state in the caller's basis
  double t_start_ = 0;  // seconds since the call started, when this model's run started
  Index P_ = 0;
  Vec f0_;  // flow field f = -1/2 grad L at the current state
  double L0_ = 0;
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
  double handback_t_ = 0, handback_h_ = 0;  // where a phase of "auto" gave the run back
  Vec rho_u_;  // the stabilized method's power-iteration vector (one run's, kept across phases)

  // The max_evals budget counts gradient evaluations and Hessian-vector products.
  bool over_budget() const { return o_.max_evals > 0 && res_.n_evals + res_.n_hvp >= o_.max_evals; }
  bool over_time() const { return o_.max_seconds > 0 && intr_.elapsed() - t_start_ >= o_.max_seconds; }

  // runner.cpp: evaluations, records, stops, error norm, work accounting
  double eval(const Vec& y, Vec& f);
  void record(size_t j, const Vec& y, double L);
  void record_upto(double t, const Vec& y);
  bool check_stop(double t);
  void accept(Vec& y, Vec& yn, Vec& fn, double Ln);
  bool stop_after_rejection(double t);
  double next_target(double t) const;
  double err_norm(const Vec& err, const Vec& y, const Vec& yn) const;
  double initial_step(const Vec& y) const;
  void finish_small_step(double t);
  // Work so far in gradient-evaluation units (deterministic: "auto" compares methods by it).
  double work_done() const { return double(res_.n_evals) + cost_.hvp * double(res_.n_hvp); }

  // explicit.cpp
  void run_euler(Vec& y);
  void run_fixed_rk4(Vec& y);
  // adaptive.cpp
  void run_adaptive(Vec& y, int mode, bool krylov = false, double t0 = 0, double h_start = 0,
                    double rate_limit = 0);
  double spectral_radius(const RMat& Hs, Vec& u, int iters) const;
  // krylov.cpp
  void krylov_setup();
  bool minres(const Vec& y, double c, const Vec& b, Vec& x);
  bool stage_solve(const Vec& y, double c, const Vec& b, Vec& x);
  // stabilized.cpp
  void run_stabilized(Vec& y, bool in_auto, double t0 = 0, double h_start = 0);
  double flow_radius(const Vec& y, Vec& u, int max_iters);
  // auto.cpp
  void run_auto_large(Vec& y);
};

}  // namespace fastattn
