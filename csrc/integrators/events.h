// Events: scalar functions of the state crossing a level (a coordinate of the parameters in the
// caller's basis, or the loss), located inside each accepted step by dense output.
#pragma once

#include <vector>

#include "eigen_types.h"
#include "objective.h"

namespace fastattn {

struct Event {
  Index index = -1;    // the coordinate of the parameters (caller's basis) that crosses; -1: the loss
  double level = 0;
  int direction = 0;   // +1: upward crossings only, -1: downward only, 0: both
  bool terminal = false;  // stop the run there (status "event")
};

struct EventHit {
  int event;   // index into Options::events
  double t;
  Vec state;   // the parameters there, caller's basis
};

// One accepted step: its ends' states y, flow fields f = -1/2 grad L and losses.
struct StepEnds {
  double t0, t1;
  const Vec &y0, &f0;
  double L0;
  const Vec &y1, &f1;
  double L1;
};

// Crossings are located on the cubic Hermite interpolant of the step (y and dy/dt = f at both ends;
// for the loss dL/dt = grad L . f = -2 |f|^2), accurate to O(h^4) for every method.
class EventTracker {
 public:
  EventTracker(const Objective& obj, const std::vector<Event>& events);
  bool empty() const { return events_.empty(); }
  // The values at the initial state.
  void start(const Vec& y, double L);
  // Appends the step's crossings to hits, in time order. At a terminal one, returns true with its
  // time and working-basis state in t_stop, y_stop (later crossings are not reported; y_stop may be
  // s.y0 itself: it is written last).
  bool step(const StepEnds& s, std::vector<EventHit>& hits, double& t_stop, Vec& y_stop);

 private:
  const Objective& obj_;
  const std::vector<Event>& events_;
  std::vector<Vec> weights_;  // coordinate events: the coordinate is weights_[j] . y (working basis)
  std::vector<double> g_;     // each event's value at the current state

  double value(size_t j, const Vec& y, double L) const;
  double rate(size_t j, const Vec& f) const;
  void state_at(const StepEnds& s, double u, Vec& y) const;
};

}  // namespace fastattn
