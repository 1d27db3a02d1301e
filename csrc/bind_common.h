// Helpers shared by the pybind11 binding files (bindings.cpp and csrc/objectives/bind_*.cpp): float64
// arrays in and out, and their shape checks with errors that name the argument.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "objective.h"

namespace fastattn::bind {

namespace py = pybind11;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;

inline Arr new_array(std::vector<py::ssize_t> shape) { return Arr(shape); }

// K for params [P] or [K, P] (P = the objective's size); a clear error otherwise.
inline Index batch_of(const Arr& params, Index P, const char* name) {
  if ((params.ndim() != 1 && params.ndim() != 2) || params.shape(params.ndim() - 1) != P)
    throw std::invalid_argument(std::string(name) + " must be [P] or [K, P] with P = " +
                                std::to_string(P));
  return params.ndim() == 1 ? 1 : Index(params.shape(0));
}

inline void require_vector(const Arr& a, Index P, const char* name) {
  if (a.ndim() != 1 || a.shape(0) != P)
    throw std::invalid_argument(std::string(name) + " must be [P] with P = " + std::to_string(P));
}

inline Mat square(const Arr& a, int D, const char* name) {
  if (a.ndim() != 2 || a.shape(0) != D || a.shape(1) != D)
    throw std::invalid_argument(std::string(name) + " must be [D, D] with D = " + std::to_string(D));
  return CRMap(a.data(), D, D);
}

// Parameters [P] or [K, P] into the objective's working basis (to_working) or back.
inline Arr change_basis(const Objective& obj, const Arr& params, bool to_working) {
  const Index P = obj.size(), K = batch_of(params, P, "params");
  Arr out(std::vector<py::ssize_t>(params.shape(), params.shape() + params.ndim()));
  for (Index k = 0; k < K; ++k) {
    if (to_working) obj.to_working(params.data() + k * P, out.mutable_data() + k * P);
    else obj.from_working(params.data() + k * P, out.mutable_data() + k * P);
  }
  return out;
}

// Each objective's bindings (one file each, csrc/objectives/bind_<objective>.cpp), called by the
// module after the Objective base class is registered.
void register_linear_attention(py::module_& m);
void register_induction(py::module_& m);
void register_autoregressive(py::module_& m);
void register_wishart_tasks(py::module_& m);

}  // namespace fastattn::bind
