// Event location; see events.h.
#include "integrators/events.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fastattn {

namespace {

// The cubic Hermite basis on u in [0, 1] (h00, h10, h01, h11).
struct Hermite {
  double h00, h10, h01, h11;
  explicit Hermite(double u) {
    const double u2 = u * u, u3 = u2 * u;
    h00 = 2 * u3 - 3 * u2 + 1;
    h10 = u3 - 2 * u2 + u;
    h01 = -2 * u3 + 3 * u2;
    h11 = u3 - u2;
  }
};

bool crosses(double g0, double g1, int direction) {
  const bool up = g0 < 0 && g1 >= 0, down = g0 > 0 && g1 <= 0;
  return direction > 0 ? up : direction < 0 ? down : (up || down);
}

// The root in (0, 1] of the cubic p(u) = H(u) . (g0, h d0, g1, h d1) with p(0) p(1) <= 0, p(0) != 0:
// bisection on the sign change, to rounding.
double hermite_root(double g0, double hd0, double g1, double hd1) {
  auto p = [&](double u) {
    const Hermite b(u);
    return b.h00 * g0 + b.h10 * hd0 + b.h01 * g1 + b.h11 * hd1;
  };
  double lo = 0, hi = 1;
  const bool neg_lo = g0 < 0;
  for (int it = 0; it < 200 && hi - lo > 1e-15; ++it) {
    const double mid = 0.5 * (lo + hi), pm = p(mid);
    if (pm == 0) return mid;
    ((pm < 0) == neg_lo ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

EventTracker::EventTracker(const Objective& obj, const std::vector<Event>& events)
    : obj_(obj), events_(events), weights_(events.size()), g_(events.size(), 0.0) {
  // coordinate i of from_working(y) is (to_working(e_i)) . y: the change of basis is orthogonal
  const Index P = obj.size();
  Vec e = Vec::Zero(P);
  for (size_t j = 0; j < events.size(); ++j) {
    if (events[j].index < 0) continue;
    e(events[j].index) = 1.0;
    weights_[j].resize(P);
    obj.to_working(e.data(), weights_[j].data());
    e(events[j].index) = 0.0;
  }
}

double EventTracker::value(size_t j, const Vec& y, double L) const {
  return (events_[j].index < 0 ? L : weights_[j].dot(y)) - events_[j].level;
}

double EventTracker::rate(size_t j, const Vec& f) const {
  return events_[j].index < 0 ? -2.0 * f.squaredNorm() : weights_[j].dot(f);
}

void EventTracker::start(const Vec& y, double L) {
  for (size_t j = 0; j < events_.size(); ++j) g_[j] = value(j, y, L);
}

void EventTracker::state_at(const StepEnds& s, double u, Vec& y) const {
  const Hermite b(u);
  const double h = s.t1 - s.t0;
  y = b.h00 * s.y0 + (b.h10 * h) * s.f0 + b.h01 * s.y1 + (b.h11 * h) * s.f1;
}

bool EventTracker::step(const StepEnds& s, std::vector<EventHit>& hits, double& t_stop, Vec& y_stop) {
  const double h = s.t1 - s.t0;
  std::vector<std::pair<double, size_t>> found;  // (u, event)
  for (size_t j = 0; j < events_.size(); ++j) {
    const double g0 = g_[j], g1 = value(j, s.y1, s.L1);
    g_[j] = g1;
    if (!crosses(g0, g1, events_[j].direction)) continue;
    found.emplace_back(hermite_root(g0, h * rate(j, s.f0), g1, h * rate(j, s.f1)), j);
  }
  std::sort(found.begin(), found.end());
  Vec y(s.y0.size()), user(s.y0.size());
  for (const auto& [u, j] : found) {
    state_at(s, u, y);
    obj_.from_working(y.data(), user.data());
    const double t = u >= 1 ? s.t1 : s.t0 + u * h;
    hits.push_back({int(j), t, user});
    if (events_[j].terminal) {
      t_stop = t;
      y_stop = y;
      return true;
    }
  }
  return false;
}

}  // namespace fastattn
