// Eigen aliases shared by the objectives, the integrators and the bindings.
#pragma once

#include <Eigen/Dense>

#include <limits>

namespace fastattn {

using Index = Eigen::Index;
using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RMap = Eigen::Map<RMat>;
using CRMap = Eigen::Map<const RMat>;
using VMap = Eigen::Map<Vec>;
using CVMap = Eigen::Map<const Vec>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace fastattn
