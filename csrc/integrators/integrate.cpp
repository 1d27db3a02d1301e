// K models one after another; see integrate.h.
#include "integrators/integrate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fastattn {

std::vector<double> record_grid(const Options& o) {
  if (o.record_times.empty()) return {0.0, o.t_end};
  return o.record_times;
}

std::vector<Result> integrate(const std::vector<const Objective*>& objectives, const double* params0,
                              Index K, const Options& o, const BatchOutput& out, Interrupt& intr) {
  validate(o);
  const Index n_obj = Index(objectives.size());
  if (n_obj != 1 && n_obj != K)
    throw std::invalid_argument("objectives: pass one shared objective or one per model (K = " +
                                std::to_string(K) + "), got " + std::to_string(n_obj));
  const Index P = objectives[0]->size();
  for (const Objective* obj : objectives) {
    if (obj->size() != P)
      throw std::invalid_argument("objectives: all must have the same size P; " + obj->name() +
                                  " has " + std::to_string(obj->size()) + ", not " + std::to_string(P));
    check_capabilities(*obj, o.method);
  }
  for (const Event& e : o.events)
    if (e.index >= P)
      throw std::invalid_argument("events: coordinate " + std::to_string(e.index) + " is out of range (P = " +
                                  std::to_string(P) + ")");
  const std::vector<double> rec = record_grid(o);
  const Index T = Index(rec.size());
  std::fill(out.rec_loss, out.rec_loss + K * T, kNaN);
  if (out.rec_params) std::fill(out.rec_params, out.rec_params + K * T * P, kNaN);
  std::vector<Result> results(K);
  Vec y(P), yr(P);
  for (Index k = 0; k < K; ++k) {
    const Objective& obj = *objectives[n_obj == 1 ? 0 : k];
    const double* th = params0 + k * P;
    if (intr.hit) {
      results[k].status = "interrupted";
      std::copy(th, th + P, out.final_params + k * P);
      continue;
    }
    obj.to_working(th, y.data());
    Runner run(obj, o, rec, out.rec_loss + k * T, out.rec_params ? out.rec_params + k * T * P : nullptr,
               intr);
    results[k] = run.run(y);
    // through an Eigen-allocated (aligned) vector, as the records (see Runner::record)
    obj.from_working(y.data(), yr.data());
    std::copy(yr.data(), yr.data() + P, out.final_params + k * P);
  }
  return results;
}

}  // namespace fastattn
