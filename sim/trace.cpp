#include "sim/trace.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace fusesim::sim {

std::pair<int, int> TraceSink::ids(const std::string& lane) {
  auto it = lane_ids_.find(lane);
  if (it != lane_ids_.end()) return it->second;
  const auto slash = lane.find('/', prefix_.size());
  const std::string proc = slash == std::string::npos ? lane : lane.substr(0, slash);
  split_[lane] = {proc, slash == std::string::npos ? lane.substr(prefix_.size()) : lane.substr(slash + 1)};
  auto p = pid_of_.find(proc);
  const int pid = p != pid_of_.end() ? p->second : (pid_of_[proc] = static_cast<int>(pid_of_.size()) + 1);
  const int tid = static_cast<int>(lane_ids_.size()) + 1;
  lane_ids_[lane] = {pid, tid};
  lane_order_.push_back(lane);
  return {pid, tid};
}

void TraceSink::slice(const std::string& lane, const std::string& name, Seconds start, Seconds end,
                      nlohmann::json args) {
  const std::string l = prefix_ + lane;
  ids(l);
  events_.push_back({{"ph", "X"}, {"name", name}, {"lane", l}, {"ts", start * 1e6},
                     {"dur", std::max(0.0, end - start) * 1e6}, {"args", std::move(args)}});
}

void TraceSink::counter(const std::string& lane, const std::string& name, Seconds t, double value) {
  const std::string l = prefix_ + lane;
  ids(l);
  events_.push_back({{"ph", "C"}, {"name", l + " " + name}, {"lane", l}, {"ts", t * 1e6},
                     {"args", {{name, value}}}});
}

nlohmann::json TraceSink::to_json() const {
  // Slices on one lane may overlap (several flows on one link). Chrome's format needs slices on one
  // thread track to nest, so overlapping slices are stacked on extra rows "lane [2]", "lane [3]"...
  // assigned greedily in start order; row 0 keeps the lane's plain name.
  nlohmann::json out = nlohmann::json::array();
  std::map<std::string, std::vector<const nlohmann::json*>> by_lane;
  for (const auto& e : events_) by_lane[e["lane"].get<std::string>()].push_back(&e);
  int next_tid = 1;
  std::map<std::string, int> pid_names;
  for (const auto& lane : lane_order_) {
    const auto& [proc, thread] = split_.at(lane);
    const int pid = pid_of_.at(proc);
    if (!pid_names.count(proc)) {
      pid_names[proc] = pid;
      out.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", proc}}}});
    }
    auto evs = by_lane[lane];
    std::stable_sort(evs.begin(), evs.end(), [](const nlohmann::json* a, const nlohmann::json* b) { return (*a)["ts"].get<double>() < (*b)["ts"].get<double>(); });
    std::vector<double> row_end;  // per row: end time (us) of its last slice
    std::vector<int> row_tid;
    auto tid_for_row = [&](size_t row) {
      while (row_tid.size() <= row) {
        const int tid = next_tid++;
        row_tid.push_back(tid);
        const std::string nm = row_tid.size() == 1 ? thread : fmt::format("{} [{}]", thread, row_tid.size());
        out.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", nm}}}});
        out.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
                       {"args", {{"sort_index", tid}}}});
      }
      return row_tid[row];
    };
    tid_for_row(0);
    for (const auto* e : evs) {
      nlohmann::json ev = *e;
      ev.erase("lane");
      ev["pid"] = pid;
      if (ev["ph"] == "X") {
        const double ts = ev["ts"], end = ts + ev["dur"].get<double>();
        size_t row = 0;
        while (row < row_end.size() && row_end[row] > ts + 1e-9) ++row;
        if (row == row_end.size()) row_end.push_back(end);
        else row_end[row] = end;
        ev["tid"] = tid_for_row(row);
      } else {
        ev["tid"] = row_tid[0];
      }
      out.push_back(std::move(ev));
    }
  }
  return {{"traceEvents", out}, {"displayTimeUnit", "ns"}};
}


}  // namespace fusesim::sim
