// Engine time limits met by trace replay (sim/simulation.{hpp,cpp}): each Simulation's clock starts
// at zero, a time beyond SystemC's 64-bit picosecond counter is an error, an event budget ends a
// run that would never stop.
#include <chrono>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.hpp"

#include "sim/simulation.hpp"

namespace fusesim::sim {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Two simulations of 1e7 s each in one process: 2e7 s in all is more than the 2^64 ps = 1.8447e7 s
// a shared SystemC clock holds (the second one used to wrap the counter and never end). Each now
// starts from zero, so both end at 1e7 s.
TEST(SimTime, TwoLongSimulationsInOneProcessEachStartAtZero) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) {
    Simulation sim;
    EXPECT_EQ(sim.now(), 0.0);
    double seen = -1;
    sim.at(1e7, [&] { seen = sim.now(); });
    EXPECT_NEAR(sim.run(), 1e7, 1e-3);
    EXPECT_NEAR(seen, 1e7, 1e-3);
  }
  EXPECT_LT(seconds_since(t0), fusesim::test::time_limit_s(1.0));
}

// Beyond the counter's range (max_seconds = 0.999 x 1.8447e7 s): refused at once, not wrapped.
TEST(SimTime, ATimeBeyondTheEnginesRangeIsAnError) {
  EXPECT_NEAR(Simulation::max_seconds(), 18446744.073709551615 * 0.999, 1e-6);
  Simulation sim;
  try {
    sim.at(2e7, [] {});
    ADD_FAILURE() << "no error for 2e7 s";
  } catch (const std::range_error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the engine's range"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sim.at(std::numeric_limits<double>::infinity(), [] {}), std::range_error);
  EXPECT_THROW(sim.at(std::numeric_limits<double>::quiet_NaN(), [] {}), std::range_error);
  // Scheduled from a callback: the run ends and run() rethrows it.
  Simulation sim2;
  sim2.at(1.0, [&] { sim2.after(1.9e7, [] {}); });
  EXPECT_THROW(sim2.run(), std::range_error);
}

// A callback that reschedules itself forever: the budget (1000 callbacks) ends the run with an
// error naming it; the next simulation runs normally.
TEST(SimTime, AnEventBudgetEndsARunThatWouldNeverStop) {
  auto t0 = std::chrono::steady_clock::now();
  {
    Simulation sim;
    sim.set_event_budget(1000);
    std::function<void()> again = [&] { sim.after(1e-9, again); };
    sim.at(0, again);
    try {
      sim.run();
      ADD_FAILURE() << "run() returned";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("event budget of 1000"), std::string::npos) << e.what();
    }
    EXPECT_EQ(sim.events_processed(), 1001u);  // the 1001st callback is refused, not run
  }
  Simulation sim;
  double seen = -1;
  sim.after(2e-6, [&] { seen = sim.now(); });
  sim.run();
  EXPECT_NEAR(seen, 2e-6, 1e-12);
  EXPECT_LT(seconds_since(t0), fusesim::test::time_limit_s(1.0));
}

// Two simulations alive at once: each reads its own clock (the second one, run first, does not
// move the first one's time).
TEST(SimTime, SimulationsAliveAtOnceKeepTheirOwnClock) {
  Simulation a, b;
  double a_seen = -1, b_seen = -1;
  a.at(3e-6, [&] { a_seen = a.now(); });
  b.at(5e-6, [&] { b_seen = b.now(); });
  b.run();
  EXPECT_NEAR(b_seen, 5e-6, 1e-12);
  a.run();
  EXPECT_NEAR(a_seen, 3e-6, 1e-12);
}

}  // namespace
}  // namespace fusesim::sim
