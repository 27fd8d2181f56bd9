#include "pipeline/run_events.h"

namespace lazyagent {

const char* run_event_kind_name(RunEvent::Kind k) {
  switch (k) {
    case RunEvent::Kind::kStepStart: return "step_start";
    case RunEvent::Kind::kStepEnd: return "step_end";
    case RunEvent::Kind::kOutput: return "output";
    case RunEvent::Kind::kNote: return "note";
  }
  return "note";
}

}  // namespace lazyagent
