// K models' gradient flows, one after another (each with its own adaptive step and status).
#pragma once

#include <vector>

#include "eigen_types.h"
#include "integrators/options.h"
#include "integrators/runner.h"
#include "objective.h"

namespace fastattn {

// Where the results go (caller-owned, C order): rec_loss [K, T] and rec_params [K, T, P] (may be
// null) for the T record times (Options::record_times, or {0, t_end}), NaN where a model stopped
// before a record; final_params [K, P], the caller's basis.
struct BatchOutput {
  double* rec_loss;
  double* rec_params;
  double* final_params;
};

// The record grid the runs use: o.record_times, or {0, t_end} when it is empty.
std::vector<double> record_grid(const Options& o);

// objectives: one shared by the K models, or one each; params0 [K, P] in the caller's basis.
// Validates the options and each objective's capabilities before any run (std::invalid_argument).
// Once intr is hit, the remaining models are returned unchanged with status "interrupted".
std::vector<Result> integrate(const std::vector<const Objective*>& objectives, const double* params0,
                              Index K, const Options& o, const BatchOutput& out, Interrupt& intr);

}  // namespace fastattn
