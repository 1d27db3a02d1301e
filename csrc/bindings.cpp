// pybind11 entry point of fastattn._core: the objectives, the integrators and their options.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "integrators/runner.h"
#include "integrators/stabilized_tables.h"
#include "objectives/linear_attention.h"

namespace py = pybind11;

namespace {

using namespace fastattn;
using namespace fastattn::linear_attention;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;

// ------------------------------------------ batching helpers ------------------------------------
struct MomentSet {
  std::vector<Mat> cov, ws;
  std::vector<double> noise, inv_n;
  Index count() const { return Index(cov.size()); }
};

MomentSet read_moments(const Arr& cov, const Arr& ws, const Arr& noise, const Arr& inv_n, int D) {
  MomentSet m;
  if (cov.ndim() != 3 || ws.ndim() != 3 || cov.shape(1) != D || cov.shape(2) != D ||
      ws.shape(0) != cov.shape(0) || ws.shape(1) != D || ws.shape(2) != D)
    throw std::invalid_argument("moments: cov and w_second must be [Km, D, D]");
  const Index Km = cov.shape(0);
  if (noise.size() != Km || inv_n.size() != Km)
    throw std::invalid_argument("moments: noise and inv_n must have Km entries");
  for (Index k = 0; k < Km; ++k) {
    m.cov.push_back(CRMap(cov.data() + k * D * D, D, D));
    m.ws.push_back(CRMap(ws.data() + k * D * D, D, D));
    m.noise.push_back(noise.data()[k]);
    m.inv_n.push_back(inv_n.data()[k]);
  }
  return m;
}

std::pair<Index, Index> read_params(const Arr& params, const Dims& dm) {
  Index K;
  if (params.ndim() == 1) K = 1;
  else if (params.ndim() == 2) K = params.shape(0);
  else throw std::invalid_argument("params must be [P] or [K, P]");
  if (params.shape(params.ndim() - 1) != dm.P) throw std::invalid_argument("params: wrong length P");
  return {K, dm.P};
}

py::tuple py_loss_grad(int fam, int D, int H, int R, const Arr& params, const Arr& cov,
                       const Arr& ws, const Arr& noise, const Arr& inv_n) {
  Dims dm(fam, D, H, R);
  auto [K, P] = read_params(params, dm);
  MomentSet ms = read_moments(cov, ws, noise, inv_n, D);
  if (ms.count() != 1 && ms.count() != K) throw std::invalid_argument("moments: need 1 or K sets");
  Arr loss(std::vector<py::ssize_t>{py::ssize_t(K)});
  Arr grad(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
  const double* th = params.data();
  double* lo = loss.mutable_data();
  double* g = grad.mutable_data();
  {
    py::gil_scoped_release nogil;
    std::vector<Basis> bases;
    for (Index m = 0; m < ms.count(); ++m)
      bases.push_back(make_original(ms.cov[m], ms.ws[m], ms.noise[m], ms.inv_n[m]));
    Work w;
    for (Index k = 0; k < K; ++k)
      lo[k] = loss_grad(dm, bases[ms.count() == 1 ? 0 : k], th + k * P, g + k * P, w);
  }
  return py::make_tuple(loss, grad);
}

// Prepared evaluator: moments fixed, both bases precomputed.
class Evaluator {
 public:
  Evaluator(int fam, int D, int H, int R, const Arr& cov, const Arr& ws, double noise, double inv_n)
      : dm_(fam, D, H, R) {
    if (cov.ndim() != 2 || cov.shape(0) != D || cov.shape(1) != D || ws.ndim() != 2 ||
        ws.shape(0) != D || ws.shape(1) != D)
      throw std::invalid_argument("moments: cov and w_second must be [D, D]");
    Mat L = CRMap(cov.data(), D, D), S = CRMap(ws.data(), D, D);
    orig_ = make_original(L, S, noise, inv_n);
    eig_ = make_eigen(L, S, noise, inv_n);
  }
  Index P() const { return dm_.P; }
  bool eig_diagonal() const { return eig_.b_diag; }
  Arr eigvecs() const {
    Arr out(std::vector<py::ssize_t>{dm_.D, dm_.D});
    RMap(out.mutable_data(), dm_.D, dm_.D) = eig_.E;
    return out;
  }
  py::tuple lg(const Arr& params, bool eigen) const {
    auto [K, P] = read_params(params, dm_);
    Arr loss(std::vector<py::ssize_t>{py::ssize_t(K)});
    Arr grad(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
    const double* th = params.data();
    double* lo = loss.mutable_data();
    double* g = grad.mutable_data();
    {
      py::gil_scoped_release nogil;
      Work w;
      const Basis& bs = eigen ? eig_ : orig_;
      for (Index k = 0; k < K; ++k) lo[k] = loss_grad(dm_, bs, th + k * P, g + k * P, w);
    }
    if (params.ndim() == 1) return py::make_tuple(lo[0], grad.reshape({P}));
    return py::make_tuple(loss, grad);
  }
  Arr hess(const Arr& params) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1) throw std::invalid_argument("params must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P), py::ssize_t(P)});
    double* o = out.mutable_data();
    const double* th = params.data();
    {
      py::gil_scoped_release nogil;
      Work w;
      hessian(dm_, orig_, th, o, w);
    }
    return out;
  }
  Arr hdiag(const Arr& params) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1) throw std::invalid_argument("params must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    hessian_diag(dm_, orig_, params.data(), out.mutable_data());
    return out;
  }
  Arr hv(const Arr& params, const Arr& u) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1 || u.ndim() != 1 || u.shape(0) != P)
      throw std::invalid_argument("params and u must be [P]");
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    double* o = out.mutable_data();
    const double *th = params.data(), *uu = u.data();
    {
      py::gil_scoped_release nogil;
      Work w;
      hvp(dm_, orig_, th, uu, o, w);
    }
    return out;
  }
  Arr precond(const Arr& params, double c, const Arr& r) const {
    auto [K, P] = read_params(params, dm_);
    if (K != 1 || params.ndim() != 1 || r.ndim() != 1 || r.shape(0) != P)
      throw std::invalid_argument("params and r must be [P]");
    HeadPreconditioner pc;
    pc.prepare(dm_, orig_, params.data(), c);
    Vec z;
    pc.apply(CVMap(r.data(), P), z);
    Arr out(std::vector<py::ssize_t>{py::ssize_t(P)});
    std::copy(z.data(), z.data() + P, out.mutable_data());
    return out;
  }
  Arr rot(const Arr& params, bool to_eigen) const {
    auto [K, P] = read_params(params, dm_);
    Arr out(std::vector<py::ssize_t>(params.shape(), params.shape() + params.ndim()));
    for (Index k = 0; k < K; ++k)
      rotate_params(dm_, eig_.E, params.data() + k * P, out.mutable_data() + k * P, to_eigen);
    return out;
  }

 private:
  Dims dm_;
  Basis orig_, eig_;
};

py::dict py_integrate(int fam, int D, int H, int R, const Arr& params, const Arr& cov,
                      const Arr& ws, const Arr& noise, const Arr& inv_n, int method,
                      double t_end, double lr, double dt, double rtol, double atol, double h0,
                      const Arr& record_times, bool record_params, double target_loss,
                      double grad_tol, long long max_evals, long long max_steps,
                      double max_seconds) {
  Dims dm(fam, D, H, R);
  auto [K, P] = read_params(params, dm);
  MomentSet ms = read_moments(cov, ws, noise, inv_n, D);
  if (ms.count() != 1 && ms.count() != K) throw std::invalid_argument("moments: need 1 or K sets");
  if (method < 0 || method > 7 || method == 4) throw std::invalid_argument("method must be 0..3 or 5..7");
  std::vector<double> rec(record_times.data(), record_times.data() + record_times.size());
  const Index T = Index(rec.size());
  Opts o{method, t_end, lr, dt, rtol, atol, h0, target_loss, grad_tol, max_seconds, max_evals,
         max_steps, record_params};
  Arr loss(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(T)});
  Arr fin(std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(P)});
  Arr recp(record_params ? std::vector<py::ssize_t>{py::ssize_t(K), py::ssize_t(T), py::ssize_t(P)}
                         : std::vector<py::ssize_t>{0});
  std::vector<Result> results(K);
  {
    double* lo = loss.mutable_data();
    double* fo = fin.mutable_data();
    double* rp = record_params ? recp.mutable_data() : nullptr;
    const double* th = params.data();
    std::fill(lo, lo + K * T, kNaN);
    if (rp) std::fill(rp, rp + K * T * P, kNaN);
    py::gil_scoped_release nogil;
    std::vector<std::unique_ptr<fastattn::LinearAttention>> objs;
    for (Index m = 0; m < ms.count(); ++m)
      objs.push_back(std::make_unique<fastattn::LinearAttention>(fam, D, H, R, ms.cov[m], ms.ws[m],
                                                                 ms.noise[m], ms.inv_n[m]));
    Interrupt intr;
    intr.poll_signals = [] {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() == 0) return false;
      PyErr_Clear();
      return true;
    };
    Vec y(P), yr(P);
    for (Index k = 0; k < K; ++k) {
      const fastattn::Objective& obj = *objs[ms.count() == 1 ? 0 : k];
      if (intr.hit) {
        results[k].status = "interrupted";
        std::copy(th + k * P, th + (k + 1) * P, fo + k * P);
        continue;
      }
      obj.to_working(th + k * P, y.data());
      Runner run(obj, o, rec, lo + k * T, rp ? rp + k * T * P : nullptr, intr);
      results[k] = run.run(y);
      obj.from_working(y.data(), yr.data());
      std::copy(yr.data(), yr.data() + P, fo + k * P);
    }
  }
  py::dict out;
  py::list status;
  Arr ne(std::vector<py::ssize_t>{py::ssize_t(K)}), ns(std::vector<py::ssize_t>{py::ssize_t(K)}),
      nj(std::vector<py::ssize_t>{py::ssize_t(K)}), nr(std::vector<py::ssize_t>{py::ssize_t(K)}),
      nh(std::vector<py::ssize_t>{py::ssize_t(K)}),
      tf(std::vector<py::ssize_t>{py::ssize_t(K)});
  for (Index k = 0; k < K; ++k) {
    status.append(results[k].status);
    ne.mutable_data()[k] = double(results[k].n_evals);
    ns.mutable_data()[k] = double(results[k].n_steps);
    nj.mutable_data()[k] = double(results[k].n_jac);
    nr.mutable_data()[k] = double(results[k].n_rejected);
    nh.mutable_data()[k] = double(results[k].n_hvp);
    tf.mutable_data()[k] = results[k].t_final;
  }
  out["loss"] = loss;
  out["final_params"] = fin;
  out["params"] = record_params ? py::object(recp) : py::object(py::none());
  out["status"] = status;
  out["n_evals"] = ne;
  out["n_steps"] = ns;
  out["n_jac"] = nj;
  out["n_rejected"] = nr;
  out["n_hvp"] = nh;
  out["t_final"] = tf;
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "fastattn C++ core: exact population losses, gradients and gradient-flow integrators";
  m.attr("__version__") = FASTATTN_VERSION;
  m.attr("git_revision") = FASTATTN_GIT_REVISION;
  m.attr("eigen_version") = std::to_string(EIGEN_WORLD_VERSION) + "." +
                            std::to_string(EIGEN_MAJOR_VERSION) + "." +
                            std::to_string(EIGEN_MINOR_VERSION);
  // -march=native (the default for `pip install .`): fast here, not portable to other CPUs
  m.attr("native_build") = bool(FASTATTN_NATIVE_BUILD);
  m.def("loss_grad", &py_loss_grad, py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"),
        py::arg("params"), py::arg("cov"), py::arg("w_second"), py::arg("noise"), py::arg("inv_n"),
        "Population loss [K] and gradient [K, P] of K models (params [P] or [K, P]); moments are "
        "[Km, D, D] / [Km] with Km in {1, K}. family: 0 merged/cubic_mlp, 1 separate.");
  py::class_<Evaluator>(m, "Evaluator")
      .def(py::init<int, int, int, int, const Arr&, const Arr&, double, double>(),
           py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"), py::arg("cov"),
           py::arg("w_second"), py::arg("noise"), py::arg("inv_n"))
      .def_property_readonly("P", &Evaluator::P)
      .def_property_readonly("eig_diagonal", &Evaluator::eig_diagonal)
      .def("eigvecs", &Evaluator::eigvecs)
      .def("loss_grad", &Evaluator::lg, py::arg("params"), py::arg("eigen") = false)
      .def("hessian", &Evaluator::hess, py::arg("params"))
      .def("hvp", &Evaluator::hv, py::arg("params"), py::arg("u"))
      .def("hessian_diag", &Evaluator::hdiag, py::arg("params"))
      .def("stage_preconditioner", &Evaluator::precond, py::arg("params"), py::arg("c"), py::arg("r"),
           "(I + c Hb)^-1 r, Hb the per-head Gauss-Newton blocks (Jacobi if B, Lambda not diagonal)")
      .def("to_eigen", [](const Evaluator& e, const Arr& p) { return e.rot(p, true); })
      .def("from_eigen", [](const Evaluator& e, const Arr& p) { return e.rot(p, false); });
  m.def("integrate", &py_integrate, py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"),
        py::arg("params"), py::arg("cov"), py::arg("w_second"), py::arg("noise"),
        py::arg("inv_n"), py::arg("method"), py::arg("t_end"), py::arg("lr"), py::arg("dt"),
        py::arg("rtol"), py::arg("atol"), py::arg("h0"), py::arg("record_times"),
        py::arg("record_params"), py::arg("target_loss"), py::arg("grad_tol"),
        py::arg("max_evals"), py::arg("max_steps"), py::arg("max_seconds"),
        "Integrate K models' gradient flow (method 0 euler, 1 rk4, 2 rk45, 3 stiff (Rodas4), "
        "5 auto, 6 stiff_krylov (Hessian-free Rodas4), 7 stabilized (order-4 "
        "stabilized explicit)).");
  m.def("stabilized_table", [](int s) {
        if (s < kStabSMin || s > kStabSMax) throw std::invalid_argument("no table for this s");
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
      }, py::arg("s"), "Coefficients of the 'stabilized' method with s stages (stabilized_tables.h).");
}
