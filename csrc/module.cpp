// pybind11 entry point of fastattn._core: the float64 population evaluator and its integrators.
#include <Eigen/Core>
#include <pybind11/pybind11.h>

#include <string>

namespace py = pybind11;

void register_population(py::module_& m);  // population.cpp

PYBIND11_MODULE(_core, m) {
  m.doc() = "fastattn C++ core: exact population losses, gradients and gradient-flow integrators";
  m.attr("__version__") = FASTATTN_VERSION;
  m.attr("git_revision") = FASTATTN_GIT_REVISION;
  m.attr("eigen_version") = std::to_string(EIGEN_WORLD_VERSION) + "." +
                            std::to_string(EIGEN_MAJOR_VERSION) + "." +
                            std::to_string(EIGEN_MINOR_VERSION);
  // -march=native (the default for `pip install .`): fast here, not portable to other CPUs
  m.attr("native_build") = bool(FASTATTN_NATIVE_BUILD);
  register_population(m);
}
