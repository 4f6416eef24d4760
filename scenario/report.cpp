#include "scenario/report.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "hw/printable.hpp"

namespace fusesim::scenario {

std::string format_table(const nlohmann::json& r) {
  // Ids, names and notes come from input: control characters are escaped (hw/printable.hpp).
  const auto P = [](const std::string& t) { return hw::printable(t); };
  const models::ModelSpec* spec = models::find_spec(r["model"].get<std::string>());
  std::ostringstream o;
  o << fmt::format("scenario {}  (hardware {}, model {})\n", P(r["scenario"].get<std::string>()), P(r["hardware"].get<std::string>()),
                   P(r["model"].get<std::string>()));
  size_t w = 4;
  for (const auto& c : r["cases"]) w = std::max(w, P(c["id"].get<std::string>()).size());
  o << fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}\n", "case", w, "predicted_us", "measured_us", "error%");
  if (!r["cases"].empty() && r["cases"][0].contains("interval_us")) {
    const auto& c0 = r["cases"][0];
    const std::optional<std::string> own = spec && spec->interval_line ? spec->interval_line(c0) : std::nullopt;
    if (own)
      o << *own << "\n";
    else
      o << fmt::format("(95% interval of every prediction: +-{:.1f}%, from the hardware file's calibration residuals over the "
                       "points it was fitted on; it does not cover extrapolation to other shapes or world sizes)\n",
                       (c0["interval_us"][1].get<double>() / c0["predicted_us"].get<double>() - 1) * 100);
  }
  for (const auto& c : r["cases"]) {
    const std::string meas = c["measured_us"].is_null() ? "-" : fmt::format("{:.1f}", c["measured_us"].get<double>());
    const std::string err = c["error_pct"].is_null() ? "-" : fmt::format("{:+.1f}", c["error_pct"].get<double>());
    const bool miss = c["within_tolerance"].is_boolean() && !c["within_tolerance"].get<bool>();
    std::string flag = c.contains("known_miss") ? (miss ? "  known miss: " + P(c["known_miss"].get<std::string>()) : "  UNEXPECTED PASS of a known miss")
                       : miss ? "  OUTSIDE TOLERANCE" : "";
    if (spec && spec->row_note) flag = P(spec->row_note(c)) + flag;
    o << fmt::format("{:<{}}  {:>12.1f}  {:>12}  {:>8}{}\n", P(c["id"].get<std::string>()), w, c["predicted_us"].get<double>(), meas, err, flag);
    std::string ph;
    std::string device;  // AFD kernels ("devN/kernel" with a role): grouped per device, role named once
    for (const auto& p : c["phases"]) {
      const double d = p["end_us"].get<double>() - p["start_us"].get<double>();
      std::string name = P(p["name"].get<std::string>());
      const auto slash = name.find('/');
      if (p.contains("role") && slash != std::string::npos) {
        const std::string dev = name.substr(0, slash);
        name = name.substr(slash + 1);
        if (dev != device) {
          ph += fmt::format("{}{} ({}): ", ph.empty() ? "" : "; ", dev, P(p["role"].get<std::string>()));
          device = dev;
        } else {
          ph += ", ";
        }
        ph += fmt::format("{} {:.1f}", name, d);
      } else {
        ph += fmt::format("{}{} {:.1f}", ph.empty() ? "" : ", ", name, d);
      }
      if (p.contains("measured_us")) ph += fmt::format(" (meas {:.1f}, {:+.1f}%)", p["measured_us"].get<double>(), p["error_pct"].get<double>());
    }
    if (spec && spec->phases_note)
      if (const std::string note = P(spec->phases_note(c)); !note.empty()) ph += (ph.empty() ? "" : "; ") + note;
    if (!ph.empty()) o << fmt::format("{:<{}}    phases (us): {}\n", "", w, ph);
    if (c.contains("note") && c["note"].is_string()) o << fmt::format("{:<{}}    note: {}\n", "", w, P(c["note"].get<std::string>()));
    if (spec && spec->row_lines)
      for (const auto& line : spec->row_lines(c)) o << fmt::format("{:<{}}    {}\n", "", w, P(line));
  }
  const auto& s = r["summary"];
  o << fmt::format("compared {}  median |error| {}  max |error| {}  outside tolerance {}  known misses {}  ({:.1f} ms)\n", s["compared"].get<int>(),
                   s["median_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["median_abs_error_pct"].get<double>()),
                   s["max_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["max_abs_error_pct"].get<double>()),
                   s["outside_tolerance"].get<int>(), s["known_misses"].get<int>(), s["runtime_ms"].get<double>());
  if (spec && spec->summary_lines)
    for (const auto& line : spec->summary_lines(s)) o << P(line) << "\n";
  if (s.contains("warnings"))
    for (const auto& w : s["warnings"]) o << "warning: " << P(w.get<std::string>()) << "\n";
  return o.str();
}

std::string format_csv(const nlohmann::json& r) {
  std::ostringstream o;
  // Every model's columns in every CSV, in registry order, so that a CSV always has the same header.
  std::vector<const models::CsvColumn*> columns;
  for (const models::ModelSpec* s : models::specs())
    for (const auto& col : s->csv_columns) columns.push_back(&col);
  o << "id,predicted_us,measured_us,error_pct,params,phases,";
  for (const auto* col : columns) o << col->name << ",";
  o << "tolerance_pct,source\n";
  for (const auto& c : r["cases"]) {
    std::string ph;
    for (const auto& p : c["phases"])
      ph += fmt::format("{}{}={:.3f}", ph.empty() ? "" : ";", p["name"].get<std::string>(), p["end_us"].get<double>() - p["start_us"].get<double>());
    const auto quoted = models::csv_quoted;  // ids are free text
    std::string model_cells;
    for (const auto* col : columns) model_cells += col->cell(c) + ",";
    o << fmt::format("{},{:.3f},{},{},{},{},{}{},{}\n", quoted(c["id"].get<std::string>()), c["predicted_us"].get<double>(),
                     c["measured_us"].is_null() ? "" : fmt::format("{:.3f}", c["measured_us"].get<double>()),
                     c["error_pct"].is_null() ? "" : fmt::format("{:.3f}", c["error_pct"].get<double>()),
                     quoted(c.contains("params") ? c["params"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : "{}"), quoted(ph), model_cells,
                     c.contains("tolerance_pct") && c["tolerance_pct"].is_number() ? fmt::format("{:g}", c["tolerance_pct"].get<double>()) : "",
                     c.contains("source") && c["source"].is_string() ? quoted(c["source"].get<std::string>()) : "");
  }
  return o.str();
}


models::CheckExtras check_extras(const nlohmann::json& result) {
  const models::ModelSpec* spec = models::find_spec(result.value("model", std::string()));
  return spec && spec->check_extras ? spec->check_extras(result["summary"]) : models::CheckExtras{};
}

}  // namespace fusesim::scenario
