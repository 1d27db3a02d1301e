// pybind11 face of the fused He et al. 2025 training step (he_adam_step.h); typed in
// fastattn/_core.pyi, wrapped by fastattn.training.batched.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "sampled/he_adam_step.h"

namespace py = pybind11;

namespace fastattn {
namespace {

using namespace he_step;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using U64 = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

void check_law(const F64& xf, const F64& wf, const F64& noise, long R, int d) {
  require(xf.ndim() == 3 && xf.shape(0) == R && xf.shape(1) == d && xf.shape(2) == d,
          "x_factor must be [R, d, d]");
  require(wf.ndim() == 3 && wf.shape(0) == R && wf.shape(1) == d && wf.shape(2) == d,
          "w_factor must be [R, d, d]");
  require(noise.ndim() == 1 && noise.shape(0) == R, "noise_std must be [R]");
}

template <class T>
py::array_t<double> steps(py::array_t<T, py::array::c_style> theta, py::array_t<T, py::array::c_style> m,
                          py::array_t<T, py::array::c_style> v, const U64& seeds, const F64& lr,
                          const F64& xf, const F64& wf, const F64& noise, int heads, int dim,
                          int context, int batch, double beta1, double beta2, double eps,
                          int64_t step0, int64_t n_steps, const I64& record_at, int threads) {
  const Shape sh{heads, dim, context, batch};
  require(heads >= 1 && dim >= 1 && context >= 1 && batch >= 1,
          "heads, dim, context and batch must be positive");
  require(theta.ndim() == 2 && theta.shape(1) == sh.P(),
          "theta must be [R, P] with P = 3 H D^2 + H D = " + std::to_string(sh.P()));
  const long R = theta.shape(0);
  for (const auto* a : {&m, &v})
    require(a->ndim() == 2 && a->shape(0) == R && a->shape(1) == sh.P(),
            "exp_avg and exp_avg_sq must have theta's shape [R, P]");
  require(seeds.ndim() == 1 && seeds.shape(0) == R, "seeds must be [R]");
  require(lr.ndim() == 1 && lr.shape(0) == R, "lr must be [R]");
  check_law(xf, wf, noise, R, dim);
  require(record_at.ndim() == 1, "record_at must be a 1-d array of relative steps");
  const int64_t n_record = record_at.shape(0);
  for (int64_t q = 0; q < n_record; ++q)
    require(record_at.data()[q] >= 0 && record_at.data()[q] < n_steps &&
                (q == 0 || record_at.data()[q] > record_at.data()[q - 1]),
            "record_at must be increasing and within [0, n_steps)");
  py::array_t<double> losses({R, long(n_record)});
  std::fill(losses.mutable_data(), losses.mutable_data() + R * n_record, std::nan(""));
  T* tp = theta.mutable_data();
  T* mp = m.mutable_data();
  T* vp = v.mutable_data();
  double* lp = losses.mutable_data();
  {
    py::gil_scoped_release release;
    adam_steps<T>(tp, mp, vp, int(R), sh, seeds.data(), Law{xf.data(), wf.data(), noise.data()},
                  Adam{lr.data(), beta1, beta2, eps}, step0, n_steps, record_at.data(), n_record,
                  lp, threads);
  }
  return losses;
}

template <class T>
py::tuple sample_batch(uint64_t seed, int64_t step, int dim, int context, int batch, const F64& xf,
                       const F64& wf, double noise) {
  const Shape sh{1, dim, context, batch};
  require(dim >= 1 && context >= 1 && batch >= 1, "dim, context and batch must be positive");
  require(xf.ndim() == 2 && xf.shape(0) == dim && xf.shape(1) == dim, "x_factor must be [d, d]");
  require(wf.ndim() == 2 && wf.shape(0) == dim && wf.shape(1) == dim, "w_factor must be [d, d]");
  py::array_t<T> z({batch, context, dim + 1}), zq({batch, dim + 1}), yq(batch);
  sample<T>(seed, step, sh, xf.data(), wf.data(), noise, z.mutable_data(), zq.mutable_data(),
            yq.mutable_data());
  return py::make_tuple(z, zq, yq);
}

}  // namespace

void register_he_adam_step(py::module_& m) {
  const char* doc = R"doc(n_steps fused Adam steps of R He et al. 2025 single-query multi-head softmax runs, in
place on theta, exp_avg, exp_avg_sq [R, P] (float32 or float64; P = 3 H D^2 + H D, per run wq, wk, wv
[H, D, D] and wo [H, D] concatenated). Run r draws batch step0 + k from the counter-based stream of
seeds[r] (docs/conventions.md) with x = x_factor[r] eps, w = w_factor[r] eps, label noise std
noise_std[r]. Returns losses [R, len(record_at)]: each run's batch loss before the update at the
relative steps record_at. The GIL is released; threads split runs (R >= threads) or chunks of 16 prompts.)doc";
  m.def("he_adam_steps", &steps<float>, py::arg("theta").noconvert(), py::arg("exp_avg").noconvert(),
        py::arg("exp_avg_sq").noconvert(), py::kw_only(), py::arg("seeds"), py::arg("lr"), py::arg("x_factor"),
        py::arg("w_factor"), py::arg("noise_std"), py::arg("heads"), py::arg("dim"), py::arg("context"),
        py::arg("batch"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("step0"),
        py::arg("n_steps"), py::arg("record_at"), py::arg("threads"), doc);
  m.def("he_adam_steps", &steps<double>, py::arg("theta").noconvert(), py::arg("exp_avg").noconvert(),
        py::arg("exp_avg_sq").noconvert(), py::kw_only(), py::arg("seeds"), py::arg("lr"), py::arg("x_factor"),
        py::arg("w_factor"), py::arg("noise_std"), py::arg("heads"), py::arg("dim"), py::arg("context"),
        py::arg("batch"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("step0"),
        py::arg("n_steps"), py::arg("record_at"), py::arg("threads"));
  m.def("he_sample", [](uint64_t seed, int64_t step, int dim, int context, int batch, const F64& xf,
                        const F64& wf, double noise, bool float64) {
          return float64 ? sample_batch<double>(seed, step, dim, context, batch, xf, wf, noise)
                         : sample_batch<float>(seed, step, dim, context, batch, xf, wf, noise);
        },
        py::arg("seed"), py::arg("step"), py::kw_only(), py::arg("dim"), py::arg("context"),
        py::arg("batch"), py::arg("x_factor"), py::arg("w_factor"), py::arg("noise_std"), py::arg("float64"),
        "Batch `step` of the fused step's stream for key `seed`: (z [B, L, D], z_q [B, D], y_q [B]).");
  m.def("he_normals", [](uint64_t seed, int64_t step, int64_t prompt, int dim, int context) {
          const Shape sh{1, dim, context, 1};
          py::array_t<float> out(sh.normals());
          normals(seed, step, prompt, sh, out.mutable_data());
          return out;
        },
        py::arg("seed"), py::arg("step"), py::arg("prompt"), py::kw_only(), py::arg("dim"),
        py::arg("context"),
        "The standard normals of one prompt of the fused step's stream (float32, layout in "
        "docs/conventions.md).");
}

}  // namespace fastattn
