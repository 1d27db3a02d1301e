// The one interface between a model's exact population objective and the integrators.
//
// An objective is a loss L(theta) of P float64 parameters with its gradient; the integrators follow
// its gradient flow d theta/dt = -1/2 grad L. Everything beyond the gradient is optional, and each
// integrator asks at its start for what it needs:
//   - a dense Hessian ("stiff"),
//   - a Hessian operator: Hessian-vector products at a prepared point ("stiff_krylov", the
//     Hessian-free Rodas4 episodes of "auto"),
//   - a stage preconditioner for the Rosenbrock stage systems (I + c H) x = b (else none),
//   - a cost hint ("auto" weighs its methods by it),
//   - a working basis: an orthogonal change of parameters in which evaluations are cheaper (the
//     integrators rotate theta0 in once and rotate out only what they record or return).
// All evaluations (loss_grad, hessian, the operator, the preconditioner) take and return the
// working basis. The const methods may be called from several threads at once.
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "eigen_types.h"

namespace fastattn {

// Hessian-vector products H(theta) u at one point: prepare(theta) once, then apply many times.
// Holds its own workspace, so products can interleave with the objective's other evaluations.
class HessianOperator {
 public:
  virtual ~HessianOperator() = default;
  virtual void prepare(const double* theta) = 0;
  virtual void apply(const double* u, double* out) = 0;
};

// x ~= (I + c H(theta))^-1 b for the Rosenbrock stage systems, symmetric positive definite (MINRES
// needs that): prepare(theta, c) once per point and c, then apply many times.
class StagePreconditioner {
 public:
  virtual ~StagePreconditioner() = default;
  virtual void prepare(const double* theta, double c) = 0;
  virtual void apply(const Vec& b, Vec& x) const = 0;
};

// Costs in gradient-evaluation units, for "auto" to compare its methods (a fixed model, not timings,
// so that a batch run switches exactly as the single runs do).
struct CostHint {
  double hvp = 2.0;  // one Hessian-vector product (with the Krylov solver's vector work)
};

class Objective {
 public:
  virtual ~Objective() = default;

  // A short description for error messages, e.g. "linear_attention(separate, D=4, H=5, R=1)".
  virtual std::string name() const = 0;
  // P, the number of parameters.
  virtual Index size() const = 0;
  // L(theta); grad (may be null) <- dL/dtheta [P].
  virtual double loss_grad(const double* theta, double* grad) const = 0;

  virtual bool has_hessian() const { return false; }
  // Dense Hessian [P, P], row-major (symmetric).
  virtual void hessian(const double* /*theta*/, double* /*out*/) const {
    throw std::logic_error("objective " + name() + " has no dense Hessian");
  }
  // A fresh operator (own workspace), or null when there is none.
  virtual std::unique_ptr<HessianOperator> hessian_operator() const { return nullptr; }
  // A fresh preconditioner, or null (the stage systems are then solved unpreconditioned).
  virtual std::unique_ptr<StagePreconditioner> stage_preconditioner() const { return nullptr; }
  virtual CostHint cost_hint() const { return {}; }

  // The working basis (orthogonal: norms and the gradient's norm are the same in both bases).
  virtual void to_working(const double* in, double* out) const { std::copy(in, in + size(), out); }
  virtual void from_working(const double* in, double* out) const { std::copy(in, in + size(), out); }
  // loss_grad in the caller's basis (theta and grad [P] not rotated): to_working, loss_grad,
  // from_working, or one fused evaluation where an objective overrides it.
  virtual double loss_grad_user(const double* theta, double* grad) const {
    const Index n = size();
    Vec y(n), g(n);
    to_working(theta, y.data());
    const double loss = loss_grad(y.data(), grad == nullptr ? nullptr : g.data());
    if (grad != nullptr) from_working(g.data(), grad);
    return loss;
  }
};

}  // namespace fastattn
