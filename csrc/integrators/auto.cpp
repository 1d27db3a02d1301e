// "auto": which method integrates the flow, and when it hands over.
#include "integrators/runner.h"

namespace fastattn {

// "auto" above P = 2000: Dormand-Prince and the stabilized method (with its Rodas4 episodes)
// alternate, each handing the run to the other (run_adaptive RK45_PHASE: once stability-limited;
// run_stabilized: after 10 steps within Dormand-Prince's stability interval). Each phase lasts
// at least 10 steps; a back-off before switching again measured dearer (D = 256, N = 128: 25k
// evaluations against 20k without).
void Runner::run_auto_large(Vec& y) {
  double t = 0, h = 0;
  for (bool stab = false;; stab = !stab) {
    if (stab) run_stabilized(y, true, t, h);
    else run_adaptive(y, RK45_PHASE, false, t, h);
    if (res_.status != "running") return;
    t = handback_t_;
    h = handback_h_;
  }
}

}  // namespace fastattn
