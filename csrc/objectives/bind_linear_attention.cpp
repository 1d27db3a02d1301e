// pybind11 face of the linear attention objective (linear_attention.h); typed in fastattn/_core.pyi,
// wrapped by fastattn.population.objectives.LinearAttentionObjective.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>

#include "bind_common.h"
#include "objectives/linear_attention.h"

namespace fastattn::bind {
namespace {

namespace la = fastattn::linear_attention;

// Evaluations in the original basis (as the caller's parameters are), or the eigenbasis.
py::tuple la_loss_grad(const LinearAttention& obj, const Arr& params, bool eigen) {
  const Index P = obj.size(), K = batch_of(params, P, "params");
  Arr loss = new_array({py::ssize_t(K)});
  Arr grad = new_array({py::ssize_t(K), py::ssize_t(P)});
  {
    py::gil_scoped_release nogil;
    la::Work w;
    const la::Basis& bs = eigen ? obj.eigen() : obj.original();
    for (Index k = 0; k < K; ++k)
      loss.mutable_data()[k] = la::loss_grad(obj.dims(), bs, params.data() + k * P,
                                             grad.mutable_data() + k * P, w);
  }
  if (params.ndim() == 1) return py::make_tuple(loss.at(0), grad.reshape({py::ssize_t(P)}));
  return py::make_tuple(loss, grad);
}

Arr la_hessian(const LinearAttention& obj, const Arr& params) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  Arr out = new_array({py::ssize_t(P), py::ssize_t(P)});
  py::gil_scoped_release nogil;
  la::Work w;
  la::hessian(obj.dims(), obj.original(), params.data(), out.mutable_data(), w);
  return out;
}

Arr la_hessian_diag(const LinearAttention& obj, const Arr& params) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  Arr out = new_array({py::ssize_t(P)});
  la::hessian_diag(obj.dims(), obj.original(), params.data(), out.mutable_data());
  return out;
}

Arr la_hvp(const LinearAttention& obj, const Arr& params, const Arr& u) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  require_vector(u, P, "u");
  Arr out = new_array({py::ssize_t(P)});
  py::gil_scoped_release nogil;
  la::Work w;
  la::hvp(obj.dims(), obj.original(), params.data(), u.data(), out.mutable_data(), w);
  return out;
}

Arr la_stage_preconditioner(const LinearAttention& obj, const Arr& params, double c, const Arr& r) {
  const Index P = obj.size();
  require_vector(params, P, "params");
  require_vector(r, P, "r");
  la::HeadPreconditioner pc;
  pc.prepare(obj.dims(), obj.original(), params.data(), c);
  Vec z;
  pc.apply(CVMap(r.data(), P), z);
  Arr out = new_array({py::ssize_t(P)});
  std::copy(z.data(), z.data() + P, out.mutable_data());
  return out;
}

}  // namespace

void register_linear_attention(py::module_& m) {
  py::enum_<la::Family>(m, "Family", "A linear attention family's closed form (cubic_mlp is merged's).")
      .value("merged", la::MERGED)
      .value("separate", la::SEPARATE);
  py::class_<LinearAttention, Objective>(m, "LinearAttention", R"doc(
The exact population loss of a zero-block linear attention model (merged / cubic_mlp / separate rank R)
on a task with moments (cov, w_second, noise, inv_n). Works in the eigenbasis of cov.)doc")
      .def(py::init([](la::Family family, int D, int H, int R, const Arr& cov, const Arr& w_second,
                       double noise, double inv_n) {
             return new LinearAttention(family, D, H, R, square(cov, D, "cov"),
                                        square(w_second, D, "w_second"), noise, inv_n);
           }),
           py::kw_only(), py::arg("family"), py::arg("D"), py::arg("H"), py::arg("R"), py::arg("cov"),
           py::arg("w_second"), py::arg("noise"), py::arg("inv_n"))
      .def_property_readonly("P", &LinearAttention::size)
      .def_property_readonly("eig_diagonal", [](const LinearAttention& o) { return o.eigen().b_diag; })
      .def("eigvecs", [](const LinearAttention& o) {
        const int D = o.dims().D;
        Arr out = new_array({D, D});
        RMap(out.mutable_data(), D, D) = o.eigen().E;
        return out;
      })
      .def("loss_grad", &la_loss_grad, py::arg("params"), py::arg("eigen") = false,
           "(loss, grad [P]) for params [P], ([K], [K, P]) for [K, P]; eigen: params in Lambda's eigenbasis.")
      .def("hessian", &la_hessian, py::arg("params"))
      .def("hvp", &la_hvp, py::arg("params"), py::arg("u"))
      .def("hessian_diag", &la_hessian_diag, py::arg("params"))
      .def("stage_preconditioner", &la_stage_preconditioner, py::arg("params"), py::arg("c"), py::arg("r"),
           "(I + c Hb)^-1 r, Hb the per-head Gauss-Newton blocks (Jacobi if B, Lambda are not diagonal).")
      .def("to_eigen", [](const LinearAttention& o, const Arr& p) { return change_basis(o, p, true); },
           py::arg("params"))
      .def("from_eigen", [](const LinearAttention& o, const Arr& p) { return change_basis(o, p, false); },
           py::arg("params"));
}

}  // namespace fastattn::bind
