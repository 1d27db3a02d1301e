// What an integrate call asks for: the method, its step or tolerances, the record grid and the stops.
#pragma once

#include <string>
#include <vector>

#include "eigen_types.h"
#include "integrators/events.h"
#include "objective.h"

namespace fastattn {

enum class Method { euler, rk4, rk45, stiff, stiff_krylov, stabilized, automatic };

// The method's name as the Python API spells it ("auto" for Method::automatic).
std::string method_name(Method m);

struct Options {
  Method method = Method::automatic;
  double t_end = 1.0;
  double lr = 0;       // euler: the learning rate (one step advances t by 2 lr)
  double dt = 0;       // rk4: the step
  double rtol = 1e-6;  // adaptive methods: error tolerances
  double atol = 1e-9;
  double h0 = 0;       // adaptive methods: the first step (0: chosen from the state)
  std::vector<double> record_times;  // increasing, in [0, t_end]; empty: {0, t_end}
  bool record_params = false;
  double target_loss = kNaN;  // stop once L <= target_loss (NaN: never)
  double grad_tol = kNaN;     // stop once |grad L| < grad_tol (NaN: never)
  long long max_evals = 0;    // stop after this many gradient evaluations + HVPs (0: no cap)
  long long max_steps = 0;    // stop after this many accepted steps (0: no cap)
  double max_seconds = 0;     // stop a model after this much wall time (0: no cap)
  std::vector<Event> events;  // located and returned; a terminal one stops the run ("event")
};

// Throws std::invalid_argument naming the option when o cannot be run (the Python face checks the
// same first, with its own names).
void validate(const Options& o);
// Throws std::invalid_argument when the objective lacks what the method needs.
void check_capabilities(const Objective& obj, Method m);

struct Result {
  std::string status = "running";
  long long n_evals = 0, n_steps = 0, n_jac = 0, n_rejected = 0, n_hvp = 0;
  double t_final = 0;
  std::vector<EventHit> events;  // in time order
};

}  // namespace fastattn
