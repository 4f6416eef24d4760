// fusesim engine: Chrome/Perfetto trace-event JSON of a run (written by the caller, e.g. hw::write_file_atomic).
#pragma once

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
  /// The whole trace as {"traceEvents":[...], "displayTimeUnit":"ns"}.
  nlohmann::json to_json() const;
  size_t size() const { return events_.size(); }
  /// Lanes seen, in first-use order.
  std::vector<std::string> lanes() const { return lane_order_; }

 private:
  std::pair<int, int> ids(const std::string& lane);
  std::vector<nlohmann::json> events_;
  std::map<std::string, std::pair<int, int>> lane_ids_;
  std::map<std::string, int> pid_of_;
  std::map<std::string, std::pair<std::string, std::string>> split_;  // lane -> (process, thread)
  std::vector<std::string> lane_order_;
  std::string prefix_;
};

}  // namespace fusesim::sim
