#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/simulation.hpp"
#include "sim/event_budget.hpp"

#include <atomic>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <stdexcept>

#include <systemc>

namespace fusesim::sim {
namespace {
// SystemC time resolution is 1 ps (the default). All engine times are double seconds relative to a
// simulation's start; conversion rounds to the nearest picosecond.
constexpr double kPsPerSecond = 1e12;

void quiet_systemc_once() {
  static bool done = [] {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    // Treat SystemC warnings as errors so a misuse never passes silently.
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_THROW);
    return true;
  }();
  (void)done;
}

/// Makes a Simulation's own kernel context the current one for a scope (SystemC reads the context
/// through the global sc_curr_simcontext), and restores the previous one.
class ContextScope {
 public:
  explicit ContextScope(sc_core::sc_simcontext* ctx)
      : prev_(sc_core::sc_curr_simcontext), prev_default_(sc_core::sc_default_global_context) {
    sc_core::sc_curr_simcontext = ctx;
    sc_core::sc_default_global_context = ctx;
  }
  ~ContextScope() {
    sc_core::sc_curr_simcontext = prev_;
    sc_core::sc_default_global_context = prev_default_;
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  sc_core::sc_simcontext* prev_;
  sc_core::sc_simcontext* prev_default_;
};

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g s", s);
  return buf;
}
}  // namespace

struct Simulation::Impl {
  // Owned kernel context: time starts at zero for this simulation alone. Declared first, so it is
  // destroyed last (the event and the process handle refer to it); ~Simulation also orders it.
  std::unique_ptr<sc_core::sc_simcontext> ctx;
  std::unique_ptr<sc_core::sc_event> wake;
  sc_core::sc_process_handle proc;
  bool running = false;
  bool ran_once = false;
};

namespace {
std::atomic<uint64_t> g_default_budget{0};
}  // namespace

void set_default_event_budget(uint64_t max_events) { g_default_budget.store(max_events); }
uint64_t default_event_budget() { return g_default_budget.load(); }

Simulation::Simulation() : impl_(std::make_unique<Impl>()) {
  budget_ = g_default_budget.load();
  quiet_systemc_once();
  impl_->ctx = std::make_unique<sc_core::sc_simcontext>();
  ContextScope scope(impl_->ctx.get());
  impl_->wake = std::make_unique<sc_core::sc_event>();  // registers with the current (own) context
}

Simulation::~Simulation() {
  // The spawned process is dynamic-sensitive only to the wake event; once the agenda is empty it
  // waits on nothing and never runs again. Release the event and the handle while the own context
  // is current and alive, then the context itself; never leave a deleted context current.
  sc_core::sc_simcontext* ctx = impl_->ctx.get();
  {
    ContextScope scope(ctx);
    impl_->proc = sc_core::sc_process_handle();
    impl_->wake.reset();
    impl_->ctx.reset();
  }
  if (sc_core::sc_curr_simcontext == ctx) sc_core::sc_curr_simcontext = nullptr;
  if (sc_core::sc_default_global_context == ctx) sc_core::sc_default_global_context = nullptr;
}

Seconds Simulation::max_seconds() {
  // 2^64 - 1 ps, SystemC 2.3's sc_time::value_type at the default 1 ps resolution, less 0.1%.
  return 18446744.073709551615 * 0.999;
}

Seconds Simulation::now() const {
  ContextScope scope(impl_->ctx.get());
  // Kernel time since this simulation's start: its own context's clock, from zero, in whole ps. No
  // state of other simulations enters, so a result does not depend on what the process ran before.
  if (!impl_->ran_once && !impl_->running) return 0.0;  // not started: its clock stands at zero
  return double(impl_->ctx->time_stamp().value()) / kPsPerSecond;
}

Timer Simulation::at(Seconds t, std::function<void()> fn) {
  const Seconds n = now();
  if (!std::isfinite(t) || t > max_seconds())
    throw std::range_error("Simulation::at: time " + seconds_text(t) +
                           " is beyond the engine's range (SystemC's 64-bit picosecond clock ends at " +
                           seconds_text(max_seconds()) + "): the simulated span is too long");
  if (t < n - 1e-12) throw std::logic_error("Simulation::at: time in the past");
  if (t < n) t = n;
  Item it{t, next_seq_++, next_id_++, std::move(fn)};
  const uint64_t id = it.id;
  agenda_.push(std::move(it));
  return Timer{id};
}

void Simulation::cancel(Timer t) {
  if (!t.valid()) return;
  auto pos = std::lower_bound(cancelled_.begin(), cancelled_.end(), t.id);
  if (pos == cancelled_.end() || *pos != t.id) cancelled_.insert(pos, t.id);
}

void Simulation::step() {
  const Seconds n = now();
  // Run everything due now (callbacks may schedule more at the same time; they run too).
  while (!agenda_.empty() && agenda_.top().t <= n + 0.5e-12) {
    Item it = agenda_.top();
    agenda_.pop();
    auto pos = std::lower_bound(cancelled_.begin(), cancelled_.end(), it.id);
    if (pos != cancelled_.end() && *pos == it.id) {
      cancelled_.erase(pos);
      continue;
    }
    ++events_;
    if (budget_ != 0 && events_ > budget_) {
      error_ = std::make_exception_ptr(std::runtime_error(
          "simulation stopped: event budget of " + std::to_string(budget_) + " callbacks spent at t = " +
          seconds_text(n) + " (a pathological input, or one larger than the budget allows)"));
      agenda_ = decltype(agenda_)();
      cancelled_.clear();
      return;
    }
    try {
      it.fn();
    } catch (...) {
      // Keep the exception out of the SystemC kernel: drop the agenda (the process goes dormant and
      // sc_start returns), and let run() rethrow it.
      error_ = std::current_exception();
      agenda_ = decltype(agenda_)();
      cancelled_.clear();
      return;
    }
  }
  // Drop cancelled items at the head so we never wake up for nothing.
  while (!agenda_.empty()) {
    auto pos = std::lower_bound(cancelled_.begin(), cancelled_.end(), agenda_.top().id);
    if (pos == cancelled_.end() || *pos != agenda_.top().id) break;
    cancelled_.erase(pos);
    agenda_.pop();
  }
  if (!agenda_.empty()) {
    const double dt_ps = std::max(0.0, std::round((agenda_.top().t - n) * kPsPerSecond));
    impl_->wake->notify(sc_core::sc_time(dt_ps, sc_core::SC_PS));
    sc_core::next_trigger(*impl_->wake);
  }
  // else: no next_trigger and no static sensitivity -> the process is dormant for good.
}

Seconds Simulation::run() {
  if (ran_) throw std::logic_error("Simulation::run called twice");
  ran_ = true;
  ContextScope scope(impl_->ctx.get());
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  // Runs once at the current time (initialisation), then whenever the wake event fires.
  impl_->proc = sc_core::sc_spawn([this] { step(); }, sc_core::sc_gen_unique_name("fusesim_sim"),
                                  &opts);
  impl_->running = true;
  auto finish = [&] {
    impl_->running = false;
    impl_->ran_once = true;
  };
  try {
    sc_core::sc_start();
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (error_) std::rethrow_exception(error_);
  return now();
}

}  // namespace fusesim::sim

// libsystemc references sc_main from its own main(); fusesim's programs have their own main() and
// drive the kernel directly, so this definition is only there to satisfy the linker.
int sc_main(int, char**) { return 0; }
