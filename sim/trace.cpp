#include "sim/trace.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

namespace fusesim::sim {

uint32_t TraceSink::lane_index(const std::string& lane) {
  auto it = lane_index_.find(lane);
  if (it != lane_index_.end()) return it->second;
  const auto slash = lane.find('/', prefix_.size());
  const std::string proc = slash == std::string::npos ? lane : lane.substr(0, slash);
  split_.emplace_back(proc, slash == std::string::npos ? lane.substr(prefix_.size()) : lane.substr(slash + 1));
  if (!pid_of_.count(proc)) pid_of_[proc] = static_cast<int>(pid_of_.size()) + 1;
  const auto idx = static_cast<uint32_t>(lane_order_.size());
  lane_index_[lane] = idx;
  lane_order_.push_back(lane);
  return idx;
}

void TraceSink::slice(const std::string& lane, const std::string& name, Seconds start, Seconds end,
                      nlohmann::json args) {
  const uint32_t l = lane_index(prefix_ + lane);
  events_.push_back({'X', l, start * 1e6, std::max(0.0, end - start) * 1e6, name, args.dump()});
}

void TraceSink::counter(const std::string& lane, const std::string& name, Seconds t, double value) {
  const std::string full = prefix_ + lane;
  const uint32_t l = lane_index(full);
  events_.push_back({'C', l, t * 1e6, 0.0, full + " " + name, nlohmann::json{{name, value}}.dump()});
}

std::string TraceSink::to_text() const {
  // Slices on one lane may overlap (several flows on one link). Chrome's format needs slices on one
  // thread track to nest, so overlapping slices are stacked on extra rows "lane [2]", "lane [3]"...
  // assigned greedily in start order; row 0 keeps the lane's plain name.
  std::vector<std::vector<uint32_t>> by_lane(lane_order_.size());
  for (uint32_t i = 0; i < events_.size(); ++i) by_lane[events_[i].lane].push_back(i);
  std::string out = "{\"traceEvents\":[";
  auto it = std::back_inserter(out);
  bool first = true;
  auto sep = [&] {
    if (!first) out += ',';
    first = false;
  };
  auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  int next_tid = 1;
  std::map<std::string, bool> named;
  for (uint32_t lane = 0; lane < lane_order_.size(); ++lane) {
    const auto& [proc, thread] = split_[lane];
    const int pid = pid_of_.at(proc);
    if (!named[proc]) {
      named[proc] = true;
      sep();
      fmt::format_to(it, R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid, quoted(proc));
    }
    auto& evs = by_lane[lane];
    std::stable_sort(evs.begin(), evs.end(), [&](uint32_t a, uint32_t b) { return events_[a].ts_us < events_[b].ts_us; });
    std::vector<double> row_end;  // per row: end time (us) of its last slice
    std::vector<int> row_tid;
    auto tid_for_row = [&](size_t row) {
      while (row_tid.size() <= row) {
        const int tid = next_tid++;
        row_tid.push_back(tid);
        const std::string nm = row_tid.size() == 1 ? thread : fmt::format("{} [{}]", thread, row_tid.size());
        sep();
        fmt::format_to(it, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid, quoted(nm));
        sep();
        fmt::format_to(it, R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid, tid);
      }
      return row_tid[row];
    };
    tid_for_row(0);
    for (const uint32_t i : evs) {
      const Event& e = events_[i];
      if (e.ph == 'X') {
        size_t row = 0;
        while (row < row_end.size() && row_end[row] > e.ts_us + 1e-9) ++row;
        if (row == row_end.size()) row_end.push_back(e.ts_us + e.dur_us);
        else row_end[row] = e.ts_us + e.dur_us;
        const int tid = tid_for_row(row);  // may first write the new row's metadata events
        sep();
        fmt::format_to(it, R"({{"ph":"X","name":{},"ts":{},"dur":{},"args":{},"pid":{},"tid":{}}})", quoted(e.name),
                       nlohmann::json(e.ts_us).dump(), nlohmann::json(e.dur_us).dump(), e.args, pid, tid);
      } else {
        sep();
        fmt::format_to(it, R"({{"ph":"C","name":{},"ts":{},"args":{},"pid":{},"tid":{}}})", quoted(e.name),
                       nlohmann::json(e.ts_us).dump(), e.args, pid, row_tid[0]);
      }
    }
  }
  out += "],\"displayTimeUnit\":\"ns\"}";
  return out;
}

nlohmann::json TraceSink::to_json() const { return nlohmann::json::parse(to_text()); }

}  // namespace fusesim::sim
