// pybind11 face of Sander et al. 2024's autoregressive objective (autoregressive.h); typed in
// fastattn/_core.pyi, wrapped by fastattn.population.autoregressive.
#include <pybind11/pybind11.h>

#include "bind_common.h"
#include "objectives/autoregressive.h"

namespace fastattn::bind {

void register_autoregressive(py::module_& m) {
  py::enum_<autoregressive::Context>(m, "Context",
                                     "Sander et al.: the context law (unitary_paper: Prop. 4 as printed).")
      .value("unitary", autoregressive::UNITARY)
      .value("orthogonal", autoregressive::ORTHOGONAL)
      .value("unitary_paper", autoregressive::UNITARY_PAPER);

  py::class_<AutoRegressive, Objective>(m, "AutoRegressive", R"doc(
Sander et al. 2024: the exact population loss (sum over T = 2..tmax) of the diagonal multi-head linear
attention with positional matrix P on commuting unitary or orthogonal contexts (a Context);
factored: parameters (A [H, d], B [H, d], P [tmax, tmax]), else (C [d, d], P).)doc")
      .def(py::init([](autoregressive::Context context, int d, int H, int tmax, bool factored) {
             return new AutoRegressive(context, d, H, tmax, factored);
           }),
           py::kw_only(), py::arg("context"), py::arg("d"), py::arg("H"), py::arg("tmax"),
           py::arg("factored") = true)
      .def_property_readonly("P", &AutoRegressive::size);
}

}  // namespace fastattn::bind
