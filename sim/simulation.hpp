// fusesim engine: one independent discrete-event simulation on SystemC's kernel.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

namespace fusesim::sim {

class TraceSink;

/// Simulated time in seconds (double). All public engine APIs take and return seconds relative to
/// the start of the owning Simulation, so many simulations can run back to back in one process.
using Seconds = double;

/// A cancellable handle for a scheduled callback.
struct Timer {
  uint64_t id = 0;
  bool valid() const { return id != 0; }
};

/**
 * One simulation run. Owns an agenda of timed callbacks driven by a single SystemC method process
 * (spawned with sc_spawn on construction) and one sc_event: time only advances by notifying that
 * event at the next agenda time, never by ticking. Components (FlowNetwork, SlotPool, CommandQueue,
 * OpServer) schedule their own work through at()/after().
 *
 * Each Simulation owns a fresh SystemC kernel context (sc_simcontext), so its kernel time starts
 * at zero and nothing accumulates across the simulations of one process (it used to: SystemC time
 * is one 64-bit picosecond counter per context, all simulations shared one, and two replays of a
 * trace spanning 1e7 s overflowed it, after which the run never ended). Many Simulation objects may
 * be created and run one after another; several may exist at once (each reads its own context's
 * time), but only one may run at a time, and run() is not re-entrant. Not thread-safe.
 *
 * Bit-identical results: now() still converts picoseconds to seconds the way the shared clock did,
 * ((T0 + t) ps in seconds x 1e12 - T0 ps) / 1e12 with T0 where the earlier simulations of the
 * process had left that clock, because that double rounding reaches printed digits (CSV values at
 * 3 decimals moved when it changed). T0 is only arithmetic now, never kernel time; it restarts at
 * zero once past 2^53 ps (2.5 hours of simulated time in one process).
 *
 * Limits: an absolute time beyond max_seconds() (SystemC's 64-bit picosecond clock, 2^64 ps =
 * 1.8e7 s, less a margin) is refused; an optional event budget (set_event_budget) ends a run that
 * executes more callbacks than allowed. Both are clear errors, never a hang.
 *
 * Errors: std::logic_error if a callback is scheduled in the past, or run() is called twice;
 * std::range_error (from at(), or rethrown by run() when scheduled by a callback) for a time that is
 * not finite or beyond max_seconds(); std::runtime_error from run() when the event budget is spent.
 * An exception thrown by a callback stops this run (the rest of its agenda is dropped) and is
 * rethrown by run() after the SystemC kernel has returned, so it never reaches the kernel: a later
 * Simulation runs normally (an exception inside a SystemC process put the kernel in an error state,
 * and every later run failed with E548 "attempt to restart simulation after error").
 */
class Simulation {
 public:
  Simulation();
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  /// Current time in seconds since this simulation's start (see the class comment for its rounding).
  Seconds now() const;
  /// Schedule fn at absolute time t (seconds since start; t >= now()). Callbacks at equal time
  /// run in the order they were scheduled.
  Timer at(Seconds t, std::function<void()> fn);
  /// Schedule fn after delay seconds (delay >= 0).
  Timer after(Seconds delay, std::function<void()> fn) { return at(now() + delay, std::move(fn)); }
  /// Cancel a timer that has not fired yet (no-op otherwise).
  void cancel(Timer t);
  /// Run until no work is left. Returns the time of the last event (seconds).
  Seconds run();
  /// Number of agenda callbacks executed so far (engine statistics).
  uint64_t events_processed() const { return events_; }
  /// End run() with std::runtime_error once more than `max_events` callbacks have run (0, the
  /// default: no budget). For callers replaying untrusted input, so a pathological case ends.
  void set_event_budget(uint64_t max_events) { budget_ = max_events; }
  uint64_t event_budget() const { return budget_; }
  /// The latest absolute time (seconds since start) a callback may be scheduled at: SystemC's
  /// 64-bit picosecond clock (2^64 ps = 1.8447e7 s) less 0.1% so that rounding never wraps it.
  static Seconds max_seconds();

  /// Optional trace sink shared by this simulation's components (may be null).
  void set_trace(TraceSink* sink) { trace_ = sink; }
  TraceSink* trace() const { return trace_; }

 private:
  struct Item {
    Seconds t;
    uint64_t seq;
    uint64_t id;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Item& a, const Item& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  void step();  // body of the SystemC method process
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::priority_queue<Item, std::vector<Item>, Later> agenda_;
  std::vector<uint64_t> cancelled_;  // sorted ids of cancelled timers still in the agenda
  uint64_t next_seq_ = 0;
  uint64_t next_id_ = 1;
  uint64_t events_ = 0;
  uint64_t budget_ = 0;  // 0: unlimited
  bool ran_ = false;
  TraceSink* trace_ = nullptr;
  std::exception_ptr error_;  // a callback's exception, rethrown by run()
};

}  // namespace fusesim::sim
