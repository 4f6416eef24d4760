#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/simulation.hpp"

#include <cstdlib>
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
}  // namespace

struct Simulation::Impl {
  sc_core::sc_event wake;
  sc_core::sc_process_handle proc;
};

Simulation::Simulation() : impl_(std::make_unique<Impl>()) {
  quiet_systemc_once();
  t0_ps_ = sc_core::sc_time_stamp().to_seconds() * kPsPerSecond;
}

Simulation::~Simulation() {
  // The spawned process is dynamic-sensitive only to impl_->wake; once the agenda is empty it
  // waits on nothing and never runs again, so destroying the event is safe.
}

Seconds Simulation::now() const {
  return (sc_core::sc_time_stamp().to_seconds() * kPsPerSecond - t0_ps_) / kPsPerSecond;
}

Timer Simulation::at(Seconds t, std::function<void()> fn) {
  const Seconds n = now();
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
    impl_->wake.notify(sc_core::sc_time(dt_ps, sc_core::SC_PS));
    sc_core::next_trigger(impl_->wake);
  }
  // else: no next_trigger and no static sensitivity -> the process is dormant for good.
}

Seconds Simulation::run() {
  if (ran_) throw std::logic_error("Simulation::run called twice");
  ran_ = true;
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  // Runs once at the current time (initialisation), then whenever the wake event fires.
  impl_->proc = sc_core::sc_spawn([this] { step(); }, sc_core::sc_gen_unique_name("fusesim_sim"),
                                  &opts);
  sc_core::sc_start();
  if (error_) std::rethrow_exception(error_);
  return now();
}

}  // namespace fusesim::sim

// libsystemc references sc_main from its own main(); fusesim's programs have their own main() and
// drive the kernel directly, so this definition is only there to satisfy the linker.
int sc_main(int, char**) { return 0; }
