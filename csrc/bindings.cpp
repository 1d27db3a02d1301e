// pybind11 entry point of fastattn._core: the Objective interface (C++ objectives, and Python ones
// through a trampoline), the integrators' Method and Options, and integrate over K models. Each
// objective's bindings are in csrc/objectives/bind_<objective>.cpp, the He step's in
// csrc/sampled/he_bindings.cpp. The typed face of this module is fastattn/_core.pyi.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind_common.h"
#include "integrators/integrate.h"
#include "integrators/stabilized_tables.h"
#include "objective.h"

namespace py = pybind11;

namespace fastattn {
void register_he_adam_step(py::module_& m);  // sampled/he_bindings.cpp
}

namespace {

using namespace fastattn;
using namespace fastattn::bind;

// ------------------------------------------------------------------ Python-defined objectives
// Runs a call into Python (the GIL held); a KeyboardInterrupt there ends the run as "interrupted".
template <class F>
auto call_python(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt)) throw Interrupted{};
    throw;
  }
}

// A Python subclass of fastattn._core.Objective: size() and loss_grad(params) -> (loss, grad) are
// required; hvp(params, u), hessian(params) and cost_hint() are optional capabilities. Its
// working basis is its own (no change of basis).
class PyObjective : public Objective {
 public:
  std::string name() const override {
    py::gil_scoped_acquire gil;
    if (py::function f = override_of("name")) return f().cast<std::string>();
    const py::object self = py::cast(static_cast<const Objective*>(this));
    return py::str(self.attr("__class__").attr("__name__"));
  }

  Index size() const override {
    py::gil_scoped_acquire gil;
    if (P_ < 0) {
      py::function f = override_of("size");
      if (!f) throw std::invalid_argument("a Python objective must define size() -> int");
      P_ = f().cast<Index>();
    }
    return P_;
  }

  double loss_grad(const double* theta, double* grad) const override {
    const Index P = size();
    py::gil_scoped_acquire gil;
    return call_python([&] {
      py::function f = override_of("loss_grad");
      if (!f) throw std::invalid_argument("a Python objective must define loss_grad(params) -> (loss, grad)");
      const py::tuple out = f(to_array(theta, P));
      if (out.size() != 2) throw std::invalid_argument(name() + ".loss_grad must return (loss, grad)");
      if (grad) copy_result(out[1], P, grad, "loss_grad's grad");
      return out[0].cast<double>();
    });
  }

  bool has_hessian() const override {
    py::gil_scoped_acquire gil;
    return bool(override_of("hessian"));
  }

  void hessian(const double* theta, double* out) const override {
    const Index P = size();
    py::gil_scoped_acquire gil;
    call_python([&] {
      py::function f = override_of("hessian");
      if (!f) throw std::invalid_argument("objective " + name() + " has no dense Hessian");
      copy_result(f(to_array(theta, P)), P * P, out, "hessian");
    });
  }

  std::unique_ptr<HessianOperator> hessian_operator() const override {
    {
      py::gil_scoped_acquire gil;
      if (!override_of("hvp")) return nullptr;
    }
    return std::make_unique<Hvp>(*this);
  }

  CostHint cost_hint() const override { PYBIND11_OVERRIDE(CostHint, Objective, cost_hint, ); }

 private:
  mutable Index P_ = -1;  // size(), asked once

  py::function override_of(const char* method) const {
    return py::get_override(static_cast<const Objective*>(this), method);
  }
  static Arr to_array(const double* x, Index n) {
    Arr a(n);
    std::copy(x, x + n, a.mutable_data());
    return a;
  }
  void copy_result(const py::object& value, Index n, double* out, const char* what) const {
    const Arr a = Arr::ensure(value);
    if (!a || a.size() != n)
      throw std::invalid_argument(name() + ": " + what + " must be a float array of " + std::to_string(n) +
                                  " numbers");
    std::copy(a.data(), a.data() + n, out);
  }

  // Products by the Python hvp(params, u) at the prepared point.
  class Hvp : public HessianOperator {
   public:
    explicit Hvp(const PyObjective& obj) : obj_(obj) {}
    void prepare(const double* theta) override { theta_ = CVMap(theta, obj_.size()); }
    void apply(const double* u, double* out) override {
      const Index P = theta_.size();
      py::gil_scoped_acquire gil;
      call_python([&] {
        py::function f = obj_.override_of("hvp");
        obj_.copy_result(f(to_array(theta_.data(), P), to_array(u, P)), P, out, "hvp");
      });
    }

   private:
    const PyObjective& obj_;
    Vec theta_;
  };
};

// ------------------------------------------------------------------ evaluations in the caller's basis
// (the bound methods of every objective; the integrators use the working basis)
py::tuple loss_grad_user(const Objective& obj, const Arr& params) {
  const Index P = obj.size(), K = batch_of(params, P, "params");
  Arr loss = new_array({py::ssize_t(K)});
  Arr grad = new_array({py::ssize_t(K), py::ssize_t(P)});
  {
    py::gil_scoped_release nogil;
    for (Index k = 0; k < K; ++k)
      loss.mutable_data()[k] = obj.loss_grad_user(params.data() + k * P, grad.mutable_data() + k * P);
  }
  if (params.ndim() == 1) return py::make_tuple(loss.at(0), grad.reshape({py::ssize_t(P)}));
  return py::make_tuple(loss, grad);
}

Arr hvp_user(const Objective& obj, const Arr& params, const Arr& u) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  require_vector(u, P, "u");
  std::unique_ptr<HessianOperator> op = obj.hessian_operator();
  if (!op) throw std::invalid_argument("objective " + obj.name() + " has no Hessian operator");
  Arr out = new_array({py::ssize_t(P)});
  py::gil_scoped_release nogil;
  Vec y(P), uw(P), hw(P);
  obj.to_working(params.data(), y.data());
  obj.to_working(u.data(), uw.data());
  op->prepare(y.data());
  op->apply(uw.data(), hw.data());
  obj.from_working(hw.data(), out.mutable_data());
  return out;
}

Arr hessian_user(const Objective& obj, const Arr& params) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  if (!obj.has_hessian()) throw std::invalid_argument("objective " + obj.name() + " has no dense Hessian");
  Arr out = new_array({py::ssize_t(P), py::ssize_t(P)});
  py::gil_scoped_release nogil;
  Vec y(P), row(P);
  RMat Hw(P, P), T(P, P);
  obj.to_working(params.data(), y.data());
  obj.hessian(y.data(), Hw.data());
  // H = F Hw F^T with F = from_working: rotate the rows, then the columns (Hw is symmetric)
  for (Index i = 0; i < P; ++i) {
    obj.from_working(Hw.row(i).data(), row.data());
    T.row(i) = row.transpose();
  }
  RMap H(out.mutable_data(), P, P);
  for (Index j = 0; j < P; ++j) {
    const Vec col = T.col(j);
    obj.from_working(col.data(), row.data());
    H.col(j) = row;
  }
  return out;
}

// ------------------------------------------------------------------ integrate
std::vector<const Objective*> objective_list(const py::object& objectives) {
  std::vector<const Objective*> out;
  if (py::isinstance<Objective>(objectives)) {
    out.push_back(objectives.cast<const Objective*>());
    return out;
  }
  for (const py::handle o : objectives) {
    if (!py::isinstance<Objective>(o))
      throw std::invalid_argument("objectives must be an Objective or a sequence of Objectives");
    out.push_back(o.cast<const Objective*>());
  }
  if (out.empty()) throw std::invalid_argument("objectives: the sequence is empty");
  return out;
}

py::dict py_integrate(const py::object& objectives, const Arr& params, const Options& o,
                      const py::object& progress) {
  const std::vector<const Objective*> objs = objective_list(objectives);
  const Index P = objs[0]->size(), K = batch_of(params, P, "params");
  const Index T = Index(record_grid(o).size());
  Arr loss = new_array({py::ssize_t(K), py::ssize_t(T)});
  Arr fin = new_array({py::ssize_t(K), py::ssize_t(P)});
  Arr recp = o.record_params ? new_array({py::ssize_t(K), py::ssize_t(T), py::ssize_t(P)}) : new_array({0});
  std::vector<Result> results;
  {
    const BatchOutput out{loss.mutable_data(), o.record_params ? recp.mutable_data() : nullptr,
                          fin.mutable_data()};
    py::gil_scoped_release nogil;
    Interrupt intr;
    intr.poll_signals = [] {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() == 0) return false;
      PyErr_Clear();
      return true;
    };
    if (!progress.is_none())  // progress(t, loss, n_evals); its errors never stop the run
      intr.report = [&progress, &intr](double t, double loss, long long n) {
        py::gil_scoped_acquire gil;
        try {
          progress(t, loss, n);
        } catch (py::error_already_set& e) {
          if (e.matches(PyExc_KeyboardInterrupt)) intr.hit = true;
        }
      };
    results = fastattn::integrate(objs, params.data(), K, o, out, intr);
  }
  py::list status, events;
  Arr ne = new_array({py::ssize_t(K)}), ns = new_array({py::ssize_t(K)}), nj = new_array({py::ssize_t(K)}),
      nr = new_array({py::ssize_t(K)}), nh = new_array({py::ssize_t(K)}), tf = new_array({py::ssize_t(K)});
  for (Index k = 0; k < K; ++k) {
    status.append(results[k].status);
    ne.mutable_data()[k] = double(results[k].n_evals);
    ns.mutable_data()[k] = double(results[k].n_steps);
    nj.mutable_data()[k] = double(results[k].n_jac);
    nr.mutable_data()[k] = double(results[k].n_rejected);
    nh.mutable_data()[k] = double(results[k].n_hvp);
    tf.mutable_data()[k] = results[k].t_final;
    py::list hits;
    for (const EventHit& e : results[k].events) {
      Arr state = new_array({py::ssize_t(P)});
      std::copy(e.state.data(), e.state.data() + P, state.mutable_data());
      hits.append(py::make_tuple(e.event, e.t, state));
    }
    events.append(hits);
  }
  py::dict d;
  d["loss"] = loss;
  d["final_params"] = fin;
  d["params"] = o.record_params ? py::object(recp) : py::object(py::none());
  d["status"] = status;
  d["n_evals"] = ne;
  d["n_steps"] = ns;
  d["n_jac"] = nj;
  d["n_rejected"] = nr;
  d["n_hvp"] = nh;
  d["t_final"] = tf;
  d["events"] = events;
  return d;
}

py::dict stabilized_table(int s) {
  if (s < kStabSMin || s > kStabSMax)
    throw std::invalid_argument("s=" + std::to_string(s) + ": tables exist for s = " +
                                std::to_string(kStabSMin) + ".." + std::to_string(kStabSMax));
  const int off = kStabOffset[s - kStabSMin], m = s - 4;
  const double* c = kStabFinish + 18 * (s - kStabSMin);
  auto arr = [](const double* p, int n) { return Arr(n, p); };
  py::dict d;
  d["ell"] = kStabEll[s - kStabSMin];
  d["mu"] = arr(kStabMu + off, m);
  d["nu"] = arr(kStabNu + off, m);
  d["kappa"] = arr(kStabKappa + off, m);
  d["a"] = arr(c, 6);
  d["b"] = arr(c + 6, 4);
  d["a5"] = arr(c + 10, 3);
  d["bh"] = arr(c + 13, 5);
  return d;
}

}  // namespace

// One source, several modules (CMakeLists.txt): _core_x86_64_v2/_v3/_v4, or _core.
#ifndef FASTATTN_MODULE
#define FASTATTN_MODULE _core
#endif
#ifndef FASTATTN_ISA_NAME
#define FASTATTN_ISA_NAME "generic"
#endif

PYBIND11_MODULE(FASTATTN_MODULE, m) {
  m.doc() = "fastattn C++ core: exact population objectives and gradient-flow integrators";
  m.attr("__version__") = FASTATTN_VERSION;
  m.attr("eigen_version") = std::to_string(EIGEN_WORLD_VERSION) + "." +
                            std::to_string(EIGEN_MAJOR_VERSION) + "." +
                            std::to_string(EIGEN_MINOR_VERSION);
  // the instruction-set level it was compiled for: x86-64-v2/v3/v4, native or generic
  m.attr("isa") = FASTATTN_ISA_NAME;
  m.attr("native_build") = std::string(FASTATTN_ISA_NAME) == "native";
  fastattn::register_he_adam_step(m);

  py::class_<CostHint>(m, "CostHint", "Costs in gradient-evaluation units, for 'auto'.")
      .def(py::init([](double hvp) { return CostHint{hvp}; }), py::arg("hvp") = 2.0)
      .def_readwrite("hvp", &CostHint::hvp);

  py::class_<Objective, PyObjective>(m, "Objective", R"doc(
An exact objective L(params) whose gradient flow the integrators follow.

Subclass it in Python (call super().__init__()) and define size() -> int and
loss_grad(params [P]) -> (loss, grad [P]); optionally hvp(params, u) -> [P], hessian(params) -> [P, P]
and cost_hint() -> CostHint. The bound methods below evaluate in the caller's basis.)doc")
      .def(py::init<>())
      .def("name", &Objective::name)
      .def("size", &Objective::size)
      .def("loss_grad", &loss_grad_user, py::arg("params"),
           "(loss, grad [P]) for params [P]; ([K], [K, P]) for [K, P].")
      .def("hvp", &hvp_user, py::arg("params"), py::arg("u"), "Hessian-vector product [P].")
      .def("hessian", &hessian_user, py::arg("params"), "Dense Hessian [P, P].")
      .def("cost_hint", &Objective::cost_hint)
      .def_property_readonly("has_hessian", &Objective::has_hessian)
      .def_property_readonly("has_hessian_operator",
                             [](const Objective& o) { return o.hessian_operator() != nullptr; })
      .def_property_readonly("has_stage_preconditioner",
                             [](const Objective& o) { return o.stage_preconditioner() != nullptr; })
      .def("to_working", [](const Objective& o, const Arr& p) { return change_basis(o, p, true); },
           py::arg("params"), "Parameters [P] or [K, P] in the objective's working basis.")
      .def("from_working", [](const Objective& o, const Arr& p) { return change_basis(o, p, false); },
           py::arg("params"), "Working-basis parameters [P] or [K, P] back in the caller's basis.");

  // each objective's bindings: csrc/objectives/bind_<objective>.cpp
  register_linear_attention(m);
  register_induction(m);
  register_autoregressive(m);
  register_wishart_tasks(m);

  py::class_<Event>(m, "Event", R"doc(
A scalar function of the state crossing a level: coordinate `index` of the parameters (caller's
basis), or the loss (index -1), minus `level`; direction +1 / -1 / 0: upward, downward or both
crossings; terminal: stop the run there (status "event").)doc")
      .def(py::init([](double level, Index index, int direction, bool terminal) {
             return Event{index, level, direction, terminal};
           }),
           py::kw_only(), py::arg("level"), py::arg("index") = -1, py::arg("direction") = 0,
           py::arg("terminal") = false)
      .def_readonly("level", &Event::level)
      .def_readonly("index", &Event::index)
      .def_readonly("direction", &Event::direction)
      .def_readonly("terminal", &Event::terminal);

  py::enum_<Method>(m, "Method", "The integrators (docs/theory.md section 4).")
      .value("euler", Method::euler)
      .value("rk4", Method::rk4)
      .value("rk45", Method::rk45)
      .value("stiff", Method::stiff)
      .value("stiff_krylov", Method::stiff_krylov)
      .value("stabilized", Method::stabilized)
      .value("auto", Method::automatic);

  py::class_<Options>(m, "Options", "What an integrate call asks for (see fastattn.population.FlowOptions).")
      .def(py::init([](Method method, double t_end, double lr, double dt, double rtol, double atol, double h0,
                       std::vector<double> record_times, bool record_params, double target_loss,
                       double grad_tol, long long max_evals, long long max_steps, double max_seconds,
                       std::vector<Event> events) {
             Options o;
             o.method = method;
             o.t_end = t_end;
             o.lr = lr;
             o.dt = dt;
             o.rtol = rtol;
             o.atol = atol;
             o.h0 = h0;
             o.record_times = std::move(record_times);
             o.record_params = record_params;
             o.target_loss = target_loss;
             o.grad_tol = grad_tol;
             o.max_evals = max_evals;
             o.max_steps = max_steps;
             o.max_seconds = max_seconds;
             o.events = std::move(events);
             validate(o);
             return o;
           }),
           py::kw_only(), py::arg("method") = Method::automatic, py::arg("t_end") = 1.0, py::arg("lr") = 0.0,
           py::arg("dt") = 0.0, py::arg("rtol") = 1e-6, py::arg("atol") = 1e-9, py::arg("h0") = 0.0,
           py::arg("record_times") = std::vector<double>{}, py::arg("record_params") = false,
           py::arg("target_loss") = kNaN, py::arg("grad_tol") = kNaN, py::arg("max_evals") = 0,
           py::arg("max_steps") = 0, py::arg("max_seconds") = 0.0, py::arg("events") = std::vector<Event>{})
      .def_readonly("method", &Options::method)
      .def_readonly("t_end", &Options::t_end)
      .def_readonly("lr", &Options::lr)
      .def_readonly("dt", &Options::dt)
      .def_readonly("rtol", &Options::rtol)
      .def_readonly("atol", &Options::atol)
      .def_readonly("h0", &Options::h0)
      .def_readonly("record_times", &Options::record_times)
      .def_readonly("record_params", &Options::record_params)
      .def_readonly("target_loss", &Options::target_loss)
      .def_readonly("grad_tol", &Options::grad_tol)
      .def_readonly("max_evals", &Options::max_evals)
      .def_readonly("max_steps", &Options::max_steps)
      .def_readonly("max_seconds", &Options::max_seconds)
      .def_readonly("events", &Options::events);

  m.def("integrate", &py_integrate, py::arg("objectives"), py::arg("params"), py::arg("options"),
        py::arg("progress") = py::none(),
        R"doc(Integrate K models' gradient flows d theta/dt = -1/2 grad L, one after another with the GIL
released. objectives: one (shared) or K; params [P] or [K, P]. Returns a dict of arrays: loss [K, T],
final_params [K, P], params [K, T, P] or None, status (K strings), n_evals, n_steps, n_jac, n_rejected,
n_hvp, t_final [K], events (per model, a list of (event index, t, params [P]) in time order).)doc");
  m.def("stabilized_table", &stabilized_table, py::arg("s"),
        "Coefficients of the 'stabilized' method with s stages (integrators/stabilized_tables.h).");
}
