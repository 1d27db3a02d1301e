// pybind11 face of Musat et al. 2025's induction objectives (induction_three_param.h,
// induction_gram.h); typed in fastattn/_core.pyi, wrapped by fastattn.population.induction.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <vector>

#include "bind_common.h"
#include "objectives/induction_gram.h"
#include "objectives/induction_three_param.h"

namespace fastattn::bind {
namespace {

// The query position and the attention mask cross the boundary as enums (the objectives take flags).
enum class Query { last, uniform };
enum class Mask { strict, inclusive };

}  // namespace

void register_induction(py::module_& m) {
  py::enum_<Query>(m, "Query", "Musat et al.: the query position, q = N ('last') or uniform over 1..N.")
      .value("last", Query::last)
      .value("uniform", Query::uniform);
  py::enum_<Mask>(m, "Mask", "Musat et al.: the causal mask, strict (keys before the query) or inclusive.")
      .value("strict", Mask::strict)
      .value("inclusive", Mask::inclusive);
  // Musat et al. 2025 (docs/musat2025.md)
  py::class_<induction::ThreeParam, Objective>(m, "InductionThreeParam", R"doc(
The 3-parameter induction-head model (alpha_3, beta_2, gamma_3) on orthonormal data: exact population
loss (summed over the output coordinates) and gradient, at a Query position under a Mask.)doc")
      .def(py::init([](int N, Query query, Mask mask) {
             return new induction::ThreeParam(N, query == Query::uniform, mask == Mask::inclusive);
           }),
           py::kw_only(), py::arg("N"), py::arg("query") = Query::last, py::arg("mask") = Mask::strict)
      .def_property_readonly("N", &induction::ThreeParam::N)
      .def("loss_grad_query", [](const induction::ThreeParam& o, const Arr& params, int q) {
             require_vector(params, 3, "params");
             Arr grad = new_array({3});
             const double loss = o.loss_grad_query(params.data(), q, grad.mutable_data());
             return py::make_tuple(loss, grad);
           },
           py::arg("params"), py::arg("q"), "(loss, grad [3]) of query position q (1-based) alone.");

  py::class_<induction::Gram19, Objective>(m, "InductionGram19", R"doc(
The 19 pseudo-parameter disentangled transformer in Gram space: the weighted sum over S sequences of
its loss, from their Gram matrices G1, G2, GM [S, L, L] and target positions [S] (0-based).)doc")
      .def(py::init([](const Arr& G1, const Arr& G2, const Arr& GM, const std::vector<int>& target,
                       const Arr& weights, Mask mask) {
             if (G1.ndim() != 3 || G1.shape(1) != G1.shape(2))
               throw std::invalid_argument("G1 must be [S, L, L]");
             const int L = int(G1.shape(1));
             auto vec = [](const Arr& a) { return std::vector<double>(a.data(), a.data() + a.size()); };
             return new induction::Gram19(L, vec(G1), vec(G2), vec(GM), target, vec(weights),
                                          mask == Mask::inclusive);
           }),
           py::kw_only(), py::arg("G1"), py::arg("G2"), py::arg("GM"), py::arg("target"),
           py::arg("weights"), py::arg("mask") = Mask::strict)
      .def_property_readonly("L", &induction::Gram19::L)
      .def_property_readonly("n_sequences", &induction::Gram19::n_sequences);
}

}  // namespace fastattn::bind
