// The event budget every new sim::Simulation starts with (issue 22: a pathological case ends with
// a clear error instead of hanging). Process-wide; fusesim's run and check set it from --max-events.
#pragma once

#include <cstdint>

namespace fusesim::sim {

/// Every Simulation constructed afterwards gets set_event_budget(max_events) (0, the default: none);
/// its run() then throws std::runtime_error ("event budget of N callbacks spent at t = ...") once
/// more callbacks than that have run.
void set_default_event_budget(uint64_t max_events);
/// The budget set by set_default_event_budget (0: none).
uint64_t default_event_budget();

}  // namespace fusesim::sim
