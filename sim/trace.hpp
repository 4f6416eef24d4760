// fusesim engine: Chrome/Perfetto trace-event JSON of a run (written by the caller, e.g. hw::write_file_atomic).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulation.hpp"

namespace fusesim::sim {

/**
 * Collects complete ("X") events on named lanes and builds Chrome trace-event JSON that Perfetto
 * and chrome://tracing open. Each lane (one per resource: a CU pool, an HBM, a link direction, a
 * copy-engine queue, a NIC) becomes one thread track; lanes are grouped into processes by the text
 * before the first '/' in the lane name (e.g. "gpu0/hbm" -> process "gpu0", thread "hbm").
 * Several simulations can be added to one sink with distinct `run` prefixes.
 *
 * Times are seconds in the API and microseconds in the file (the format's unit).
 */
class TraceSink {
 public:
  /// Record one slice [start, end] (seconds) on a lane. args are shown in the viewer.
  void slice(const std::string& lane, const std::string& name, Seconds start, Seconds end,
             nlohmann::json args = nlohmann::json::object());
  /// Record a counter sample (e.g. a resource's utilisation) at time t.
  void counter(const std::string& lane, const std::string& name, Seconds t, double value);
  /// Prefix added to every lane recorded from now on (e.g. "case3:"), so runs stay apart: the
  /// process becomes "case3:gpu0".
  void set_prefix(std::string p) { prefix_ = std::move(p); }
  /// The whole trace as JSON text {"traceEvents":[...], "displayTimeUnit":"ns"}, written directly
  /// (a whole-scenario trace has millions of events: no JSON tree of them is built).
  std::string to_text() const;
  /// The same trace as a JSON value (parses to_text(); for tests and small traces).
  nlohmann::json to_json() const;
  size_t size() const { return events_.size(); }
  /// Lanes seen, in first-use order.
  std::vector<std::string> lanes() const { return lane_order_; }

 private:
  /// One recorded event, compact: the lane is an index into lane_order_, args are JSON text.
  struct Event {
    char ph;            ///< 'X' slice, 'C' counter
    uint32_t lane;
    double ts_us, dur_us;
    std::string name, args;
  };
  uint32_t lane_index(const std::string& lane);
  std::vector<Event> events_;
  std::map<std::string, uint32_t> lane_index_;
  std::map<std::string, int> pid_of_;
  std::vector<std::pair<std::string, std::string>> split_;  // per lane index: (process, thread)
  std::vector<std::string> lane_order_;
  std::string prefix_;
};

}  // namespace fusesim::sim
