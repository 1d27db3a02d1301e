// pybind11 face of Mainali & Teixeira 2025's objectives (wishart_tasks.h); typed in
// fastattn/_core.pyi, wrapped by fastattn.population.wishart_tasks.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "bind_common.h"
#include "objectives/wishart_tasks.h"

namespace fastattn::bind {

void register_wishart_tasks(py::module_& m) {
  // Mainali & Teixeira 2025 (csrc/objectives/wishart_tasks.h)
  py::class_<WishartReduced, Objective>(m, "WishartReduced", R"doc(
Exact population loss of the reduced linear transformer (p1 = q2 = 0 frozen; general p2, q1) on
vector in-context regression with x ~ N(0, U diag(s) U^T), tasks U diag(lambda) U^T, E lambda lambda^T =
omega. Parameters: [p1, p2, q1, q2] row-major d x d blocks; working basis: blocks conjugated by U.)doc")
      .def(py::init([](const Arr& s, double n, const Arr& omega, const Arr& u) {
             if (s.ndim() != 1) throw std::invalid_argument("s must be a vector [d]");
             const int d = int(s.shape(0));
             return new WishartReduced(CVMap(s.data(), d), n, square(omega, d, "omega"), square(u, d, "u"));
           }),
           py::kw_only(), py::arg("s"), py::arg("N"), py::arg("omega"), py::arg("U"));
  py::class_<WishartAligned, Objective>(m, "WishartAligned", R"doc(
Exact population loss of the aligned per-mode linear transformer: parameters [p (d), q (d)], the
diagonals of U^T p2 U and U^T q1 U; omega [d] the per-mode task second moments.)doc")
      .def(py::init([](const Arr& s, double n, const Arr& omega) {
             if (s.ndim() != 1 || omega.ndim() != 1 || omega.shape(0) != s.shape(0))
               throw std::invalid_argument("s and omega must be vectors [d] of one length");
             const int d = int(s.shape(0));
             return new WishartAligned(CVMap(s.data(), d), n, CVMap(omega.data(), d));
           }),
           py::kw_only(), py::arg("s"), py::arg("N"), py::arg("omega"));
}

}  // namespace fastattn::bind
