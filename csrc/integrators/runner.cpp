// The state every integrator shares: evaluations, records, stops, the error norm, work accounting.
#include "integrators/runner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fastattn {

std::string method_name(Method m) {
  switch (m) {
    case Method::euler: return "euler";
    case Method::rk4: return "rk4";
    case Method::rk45: return "rk45";
    case Method::stiff: return "stiff";
    case Method::stiff_krylov: return "stiff_krylov";
    case Method::stabilized: return "stabilized";
    case Method::automatic: return "auto";
  }
  return "?";
}

void validate(const Options& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!(std::isfinite(o.t_end) && o.t_end > 0)) bad("t_end must be a positive finite time");
  if (o.method == Method::euler && !(std::isfinite(o.lr) && o.lr > 0))
    bad("method euler needs a positive learning rate lr");
  if (o.method == Method::rk4 && !(std::isfinite(o.dt) && o.dt > 0)) bad("method rk4 needs a positive step dt");
  if (!(o.rtol > 0 && o.atol >= 0)) bad("need rtol > 0 and atol >= 0");
  if (!(o.h0 >= 0)) bad("h0 must be >= 0 (0: chosen from the state)");
  if (!(o.max_seconds >= 0)) bad("max_seconds must be >= 0 (0: no limit)");
  for (const Event& e : o.events)
    if (!std::isfinite(e.level) || e.direction < -1 || e.direction > 1)
      bad("events need a finite level and a direction in {-1, 0, 1}");
  for (size_t j = 0; j < o.record_times.size(); ++j) {
    const double r = o.record_times[j];
    if (!std::isfinite(r) || r < 0 || r > o.t_end * (1 + 1e-12) || (j > 0 && r < o.record_times[j - 1]))
      bad("record_times must be increasing times in [0, t_end]");
  }
}

void check_capabilities(const Objective& obj, Method m) {
  if (m == Method::stiff && !obj.has_hessian())
    throw std::invalid_argument("method stiff needs a dense Hessian: objective " + obj.name() +
                                " has none (use stiff_krylov, stabilized or rk45)");
  if (m == Method::stiff_krylov && !obj.hessian_operator())
    throw std::invalid_argument("method stiff_krylov needs a Hessian operator: objective " +
                                obj.name() + " has none (use stabilized or rk45)");
}

Result Runner::run(Vec& y) {
  res_ = Result();
  rho_u_.resize(0);
  t_start_ = intr_.elapsed();
  P_ = obj_.size();
  cost_ = obj_.cost_hint();
  f0_.resize(P_);
  if (!o_.events.empty()) events_ = std::make_unique<EventTracker>(obj_, o_.events);
  hist_n_ = 0;
  land_ = false;
  try {
    L0_ = eval(y, f0_);
    L_init_ = L0_;
    if (!std::isfinite(L0_) || !all_finite(f0_) || !all_finite(y)) {
      res_.status = "diverged";
      return res_;
    }
    if (events_) events_->start(y, L0_);
    next_rec_ = 0;
    push_history(0, y);
    switch (o_.method) {
      case Method::euler: run_euler(y); break;
      case Method::rk4: run_fixed_rk4(y); break;
      case Method::rk45: run_adaptive(y, {}); break;
      case Method::stiff: run_adaptive(y, {/*rosenbrock=*/true}); break;
      case Method::stiff_krylov: run_adaptive(y, {/*rosenbrock=*/true, /*krylov=*/true}); break;
      case Method::stabilized: run_stabilized(y, 0, 0, nullptr); break;
      case Method::automatic: run_auto(*this, y); break;
    }
  } catch (const Interrupted&) {  // y is the last accepted state
    intr_.hit = true;
    res_.status = "interrupted";
  }
  return res_;
}

double Runner::eval(const Vec& y, Vec& f) {
  ++res_.n_evals;
  const double L = obj_.loss_grad(y.data(), f.data());
  f *= -0.5;
  return L;
}

void Runner::record(size_t j, const Vec& y, double L) {
  rec_loss_[j] = L;
  if (rec_params_) {
    // into an Eigen-allocated (aligned) vector: vectorised small products round differently at
    // other alignments (an ulp), and a recorded final state must equal the returned one bit for bit
    rot_.resize(P_);
    obj_.from_working(y.data(), rot_.data());
    std::copy(rot_.data(), rot_.data() + P_, rec_params_ + Index(j) * P_);
  }
}

// Record every grid time <= t (within rounding) at the current state.
void Runner::record_upto(double t, const Vec& y) {
  while (next_rec_ < rec_.size() && rec_[next_rec_] <= t * (1 + 1e-12) + 1e-300) {
    record(next_rec_, y, L0_);
    ++next_rec_;
  }
}

// Stopping tests on the current (accepted) state. Returns true when stopping.
bool Runner::check_stop(double t) {
  res_.t_final = t;
  if (!std::isnan(o_.target_loss) && L0_ <= o_.target_loss) { res_.status = "target_loss"; return true; }
  if (!std::isnan(o_.grad_tol) && 2.0 * f0_.norm() < o_.grad_tol) { res_.status = "converged"; return true; }
  if (t >= o_.t_end * (1 - 1e-14)) { res_.status = "t_end"; return true; }
  if (over_budget()) { res_.status = "max_evals"; return true; }
  if (o_.max_steps > 0 && res_.n_steps >= o_.max_steps) { res_.status = "max_steps"; return true; }
  if (over_time()) { res_.status = "max_seconds"; return true; }
  if (intr_.poll()) { res_.status = "interrupted"; return true; }
  intr_.progress(t, L0_, res_.n_evals);
  return false;
}

// An accepted step from t0 to t1: (yn, fn = f(yn), Ln = L(yn)) become current, after the events
// in between are located and the record times strictly inside it recorded as `interp` says (the
// caller records those at t1, record_upto). True when a terminal event stopped the run inside the
// step (y is then the state there; the records before it are made).
bool Runner::accept(double t0, double t1, Vec& y, Vec& yn, Vec& fn, double Ln, const RecordInterp& interp) {
  ++res_.n_steps;
  const bool inside = interp.on && next_rec_ < rec_.size() && rec_[next_rec_] < t1 * (1 - 1e-12);
  if (events_) {
    if (inside) ev_y0_ = y;  // a terminal event overwrites y
    double t_event;
    if (events_->step({t0, t1, y, f0_, L0_, yn, fn, Ln}, res_.events, t_event, y)) {
      if (inside) record_inside(t0, ev_y0_, f0_, t1, yn, fn, interp.corr, t_event, interp.history);
      res_.status = "event";
      res_.t_final = t_event;
      return true;
    }
  }
  y.swap(yn);
  f0_.swap(fn);
  L0_ = Ln;
  if (inside) record_inside(t0, yn, fn, t1, y, f0_, interp.corr, t1, interp.history);
  push_history(t1, y);
  land_ = false;
  return false;
}

// (t, y), the state just accepted, joins the history (while records remain); the oldest leaves it.
void Runner::push_history(double t, const Vec& y) {
  if (next_rec_ >= rec_.size()) return;
  std::rotate(hist_t_, hist_t_ + 1, hist_t_ + 3);
  std::rotate(hist_y_, hist_y_ + 1, hist_y_ + 3);
  hist_t_[2] = t;
  hist_y_[2] = y;
  hist_n_ = std::min(hist_n_ + 1, 3);
}

// A step may interpolate its records through the history unless the last try did not fit.
bool Runner::may_interpolate_history() const { return hist_n_ == 3 && !land_; }

// At time t in the step from the newest history point to (t1, y1): the cubic through the three
// history points and (t1, y1), and the quadratic through the last two and (t1, y1) (nodes scaled to
// the step, so that rounding does not grow with t).
void Runner::history_point(double t, double t1, const Vec& y1, Vec& cubic, Vec* quadratic) const {
  const double t0 = hist_t_[2], h = t1 - t0;
  const double x[4] = {(hist_t_[0] - t0) / h, (hist_t_[1] - t0) / h, 0.0, 1.0};
  const Vec* ys[4] = {&hist_y_[0], &hist_y_[1], &hist_y_[2], &y1};
  const double s = (t - t0) / h;
  auto lagrange = [&](int k, int first) {
    double w = 1;
    for (int j = first; j < 4; ++j)
      if (j != k) w *= (s - x[j]) / (x[k] - x[j]);
    return w;
  };
  cubic.setZero(P_);
  for (int k = 0; k < 4; ++k) cubic += lagrange(k, 0) * *ys[k];
  if (!quadratic) return;
  quadratic->setZero(P_);
  for (int k = 1; k < 4; ++k) *quadratic += lagrange(k, 1) * *ys[k];
}

// Whether the records strictly inside a step ending at (t1, y1) may be interpolated through the
// history: at each, the cubic and the quadratic (an estimate of the quadratic's error; the cubic's is
// smaller) differ by at most kHistoryFit local error tolerances. The states are smooth where this is
// used (stabilized steps with large h rho, Rodas4 steps: the stiff components are damped), so a
// polynomial through accepted states, unlike a Hermite cubic through f (whose stiff components are
// ~ rho * the error), stays on the trajectory; but each state carries stiff components of the size
// of the error, which the divided differences amplify, hence the loose bound: it catches a history
// that does not describe the step, not noise (docs/theory.md section 4). When it does not fit, the
// step is taken again, landing on the record (land_).
bool Runner::history_fits(double t1, const Vec& y1) {
  Vec cubic(P_), quadratic(P_);
  for (size_t j = next_rec_; j < rec_.size() && rec_[j] < t1 * (1 - 1e-12); ++j) {
    history_point(rec_[j], t1, y1, cubic, &quadratic);
    if (!(err_norm(cubic - quadratic, hist_y_[2], y1) <= kHistoryFit)) {
      land_ = true;
      return false;
    }
  }
  land_ = false;
  return true;
}

// Records the grid times in (t0, t_until) of a step from (t0, y0, f0) to (t1, y1, f1) at its
// interpolant (RecordInterp). The loss is evaluated there: interpolating it too, from dL/dt =
// -2 |f|^2, was 1e-5 off in an exponential escape at rtol 1e-8.
void Runner::record_inside(double t0, const Vec& y0, const Vec& f0, double t1, const Vec& y1,
                           const Vec& f1, const Vec* corr, double t_until, bool history) {
  const double h = t1 - t0;
  while (h > 0 && next_rec_ < rec_.size() && rec_[next_rec_] < t_until * (1 - 1e-12)) {
    if (history) {
      history_point(rec_[next_rec_], t1, y1, rec_y_, nullptr);
      rec_f_.resize(P_);
      record(next_rec_, rec_y_, eval(rec_y_, rec_f_));
      ++next_rec_;
      continue;
    }
    const double s = (rec_[next_rec_] - t0) / h, u = 1.0 - s;
    // y0 + s (dy + u (h f0 - dy + s (2 dy - h f0 - h f1 + u corr))), dy = y1 - y0
    rec_y_ = 2.0 * (y1 - y0) - h * f0 - h * f1;
    if (corr) rec_y_ += u * *corr;
    rec_y_ = y0 + s * ((y1 - y0) + u * ((h * f0 - (y1 - y0)) + s * rec_y_));
    rec_f_.resize(P_);
    record(next_rec_, rec_y_, eval(rec_y_, rec_f_));
    ++next_rec_;
  }
}

// Stops checked after a rejected step (the state, still at t, is unchanged). True when stopping.
bool Runner::stop_after_rejection(double t) {
  const char* why = over_budget() ? "max_evals" : over_time() ? "max_seconds"
                    : intr_.poll() ? "interrupted" : nullptr;
  if (!why) return false;
  res_.status = why;
  res_.t_final = t;
  return true;
}

// Where the next step must end at the latest: t_end, or the next record time unless the step
// interpolates its records (RecordInterp).
double Runner::next_target(double t, bool interpolating) const {
  double tt = o_.t_end;
  if (!interpolating && next_rec_ < rec_.size() && rec_[next_rec_] < tt && rec_[next_rec_] > t)
    tt = rec_[next_rec_];
  return tt;
}

double Runner::err_norm(const Vec& err, const Vec& y, const Vec& yn) const {
  double s = 0;
  for (Index i = 0; i < P_; ++i) {
    const double sc = o_.atol + o_.rtol * std::max(std::abs(y(i)), std::abs(yn(i)));
    const double r = err(i) / sc;
    s += r * r;
  }
  return std::sqrt(s / double(P_));
}

double Runner::initial_step(const Vec& y) const {
  if (o_.h0 > 0) return o_.h0;
  Vec z = Vec::Zero(P_);
  const double d0 = err_norm(y, y, z) , d1 = err_norm(f0_, y, z);
  double h = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  return std::min(h, o_.t_end);
}

void Runner::finish_small_step(double t) {
  res_.t_final = t;
  // The step collapsed: a finite-time blow-up (diverged) or a non-finite field.
  res_.status = (L0_ > 1e100 || !std::isfinite(L0_)) ? "diverged" : "step_too_small";
  if (f0_.norm() > 1e50) res_.status = "diverged";
}

}  // namespace fastattn
