#include "cli/ci_outputs.hpp"

#include <algorithm>
#include <tuple>
#include <set>
#include <filesystem>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/printable.hpp"

namespace fusesim::cli {
namespace {

/// `s` as XML text/attribute content: &<>"' escaped, control characters (other than tab, newline,
/// carriage return) replaced by '?', invalid UTF-8 sequences by U+FFFD.
std::string xml(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\'': o += "&apos;"; break;
        default: o += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ? '?' : char(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: lead byte, then 1-3 continuation bytes; anything else is replaced.
    const int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + size_t(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + size_t(k)]) & 0xc0) == 0x80;
    if (ok && len == 2) ok = c >= 0xc2;                                                   // overlong
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);                       // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = c <= 0xf4 && !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    // U+FFFE and U+FFFF are not XML characters (XML 1.0, "Char"): a JUnit file carrying one is not well-formed.
    const bool nonchar = ok && len == 3 && c == 0xef && static_cast<unsigned char>(s[i + 1]) == 0xbf &&
                         static_cast<unsigned char>(s[i + 2]) >= 0xbe;
    if (ok && !nonchar) {
      o.append(s, i, size_t(len));
      i += size_t(len);
    } else {
      o += "\xef\xbf\xbd";
      i += nonchar ? size_t(len) : 1;  // a non-character is one replacement, a bad byte one each
    }
  }
  return o;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

/// `s` as it reads back from a file fusesim wrote as JSON: every invalid UTF-8 sequence replaced by
/// U+FFFD, as nlohmann's dump(error_handler_t::replace) does when --save-predictions or `run
/// --format json` writes it. An id holding an invalid byte is saved with U+FFFD, so the new run's id
/// is compared in the same form (issue 22's second trial: such ids never matched their baseline).
std::string as_saved_json_text(const std::string& s) {
  const std::string dumped = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(dumped).get<std::string>();
}

}  // namespace

std::string junit_xml(const std::vector<JunitFile>& files, const BaselineDiff* baseline) {
  std::string body;
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  for (const auto& f : files) {
    size_t t = 0, fl = 0, er = 0, sk = 0;
    std::string cases;
    if (f.result.is_null()) {
      t = er = 1;
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n      <error message=\"{}\" type=\"bad input\"/>\n    </testcase>\n",
                           xml(f.path), xml("(not checked)"), xml(f.error));
    } else {
      const std::string cls = text_of(f.result, "scenario");
      for (const auto& c : f.result["cases"]) {
        if (!c.contains("within_tolerance") || c["within_tolerance"].is_null()) continue;
        ++t;
        const bool ok = c["within_tolerance"].get<bool>();
        const std::string id = text_of(c, "id");
        const double pred = c["predicted_us"].get<double>(), meas = c["measured_us"].get<double>();
        const double err = c["error_pct"].get<double>(), tol = c["tolerance_pct"].get<double>();
        const std::string detail = fmt::format("predicted {:.3f} us, measured {:.3f} us, error {:+.2f}%, tolerance {:.1f}%", pred, meas, err, tol);
        cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n", xml(cls), xml(id));
        if (c.contains("known_miss")) {
          const std::string why = text_of(c, "known_miss");
          if (ok) {
            ++fl;
            cases += fmt::format("      <failure message=\"{}\" type=\"known miss now within tolerance\">{}</failure>\n",
                                 xml("marked known_miss but now within tolerance: " + detail), xml(why));
          } else {
            ++sk;
            cases += fmt::format("      <skipped message=\"{}\"/>\n", xml("known miss: " + why + " (" + detail + ")"));
          }
        } else if (!ok) {
          ++fl;
          cases += fmt::format("      <failure message=\"{}\" type=\"outside tolerance\">predicted_us={:.6g}\nmeasured_us={:.6g}\nerror_pct={:.4f}\ntolerance_pct={:.4g}\nsource={}</failure>\n",
                               xml(detail), pred, meas, err, tol, xml(text_of(c, "source")));
        }
        cases += "    </testcase>\n";
      }
    }
    tests += t;
    failures += fl;
    errors += er;
    skipped += sk;
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"0\">\n{}  </testsuite>\n",
                        xml(f.path), t, fl, er, sk, cases);
  }
  if (baseline) {
    // The moved predictions (check --baseline): one test case per compared prediction, in run order.
    const BaselineDiff& d = *baseline;
    std::string cases;
    auto one = [&](const Moved& m, bool moved) {
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n", xml(m.scenario), xml(m.id + " (prediction)"));
      if (moved)
        cases += fmt::format("      <failure message=\"{}\" type=\"prediction moved\">old_us={:.6g}\nnew_us={:.6g}\nchange_pct={:+.4f}\n"
                             "threshold_pct={:g}\nbaseline={}</failure>\n",
                             xml(fmt::format("predicted {:.3f} us, baseline {:.3f} us ({:+.3f}%, threshold {:g}%)", m.new_us, m.old_us,
                                             m.change_pct, d.threshold_pct)),
                             m.old_us, m.new_us, m.change_pct, d.threshold_pct, xml(d.baseline_name));
      cases += "    </testcase>\n";
    };
    // Run order: the moved and the unmoved interleaved as the runs listed them.
    std::vector<std::pair<const Moved*, bool>> all;
    for (const auto& m : d.moved) all.push_back({&m, true});
    for (const auto& m : d.within) all.push_back({&m, false});
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first->order < b.first->order; });
    for (const auto& [m, moved] : all) one(*m, moved);
    for (const auto& [sc, id] : d.not_in_baseline)
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                           xml(sc), xml(id + " (prediction)"), xml("not in the baseline " + d.baseline_name));
    const size_t t = d.moved.size() + d.within.size() + d.not_in_baseline.size();
    tests += t;
    failures += d.moved.size();
    skipped += d.not_in_baseline.size();
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"0\">\n{}  </testsuite>\n",
                        xml("baseline " + d.baseline_name), t, d.moved.size(), d.not_in_baseline.size(), cases);
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"fusesim check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                     "skipped=\"{}\" time=\"0\">\n{}</testsuites>\n",
                     tests, failures, errors, skipped, body);
}

nlohmann::json predictions_document(const std::vector<std::pair<std::string, nlohmann::json>>& path_and_result) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& [path, res] : path_and_result) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : res["cases"]) cases.push_back({{"id", c["id"]}, {"predicted_us", c["predicted_us"]}});
    runs.push_back({{"scenario", res["scenario"]}, {"file", path}, {"cases", cases}});
  }
  return {{"fusesim_predictions", 1}, {"runs", runs}};
}

namespace {
std::string normal_path(const std::string& p) { return std::filesystem::path(p).lexically_normal().string(); }
}  // namespace

BaselineIndex index_baseline(const nlohmann::json& baseline, const std::string& baseline_name) {
  auto bad = [&](const std::string& what) { return std::invalid_argument(fmt::format("--baseline {}: {}", baseline_name, what)); };
  const nlohmann::json* list = nullptr;
  nlohmann::json one = nlohmann::json::array();
  if (baseline.is_object() && baseline.contains("runs") && baseline["runs"].is_array()) {
    if (baseline.contains("fusesim_predictions") && baseline["fusesim_predictions"] != 1)
      throw bad(fmt::format("a predictions file of format {}; this fusesim reads format 1", baseline["fusesim_predictions"].dump()));
    list = &baseline["runs"];
  } else if (baseline.is_array()) {
    list = &baseline;
  } else if (baseline.is_object() && baseline.contains("scenario") && baseline.contains("cases")) {
    one.push_back(baseline);
    list = &one;
  } else {
    throw std::invalid_argument(fmt::format("--baseline {}: expected the JSON of `fusesim run --format json`, an array of them, or "
                                            "the file `fusesim check --save-predictions` writes",
                                            baseline_name));
  }
  // Runs are matched by their file where the baseline records it (--save-predictions does), else by
  // the scenario's name when only one run of the baseline has it: two files of one scenario name
  // (issue 22's third trial) had been compared with each other's predictions.
  BaselineIndex x;
  x.name = baseline_name;
  for (size_t r = 0; r < list->size(); ++r) {
    const auto& run = (*list)[r];
    if (!run.is_object() || !run.contains("scenario") || !run["scenario"].is_string() || !run.contains("cases") || !run["cases"].is_array())
      throw std::invalid_argument(fmt::format("--baseline {}: run {} has no scenario name and cases list", baseline_name, r));
    const std::string sc = run["scenario"].get<std::string>();
    const std::string file = run.contains("file") && run["file"].is_string() ? normal_path(run["file"].get<std::string>()) : std::string();
    if (!x.seen_runs.insert({file, sc}).second)
      throw bad(fmt::format("run {} repeats scenario '{}'{}: expected each run once", r, hw::printable(sc),
                            file.empty() ? "" : " of file '" + hw::printable(file) + "'"));
    ++x.runs_of_scenario[sc];
    std::set<std::string> ids;
    for (size_t i = 0; i < run["cases"].size(); ++i) {
      const auto& c = run["cases"][i];
      if (!c.is_object() || !c.contains("id") || !c["id"].is_string() || !c.contains("predicted_us") || !c["predicted_us"].is_number())
        throw std::invalid_argument(fmt::format("--baseline {}: a case of scenario '{}' has no id and numeric predicted_us", baseline_name,
                                                hw::printable(sc)));
      const std::string id = c["id"].get<std::string>();
      const double us = c["predicted_us"].get<double>();
      if (!(us > 0 && us <= kMaxBaselineUs))
        throw bad(fmt::format("run {} ('{}') case '{}': predicted_us {} is not a time this fusesim predicts (expected > 0 and <= {:g} us)", r,
                              hw::printable(sc), hw::printable(id), us, kMaxBaselineUs));
      if (!ids.insert(id).second) throw bad(fmt::format("run {} ('{}') lists case '{}' twice", r, hw::printable(sc), hw::printable(id)));
      if (!file.empty()) x.by_file[{file, sc, id}] = us;
      x.by_scenario[{sc, id}] = us;
    }
  }
  return x;
}

BaselineDiff compare_baseline(const BaselineIndex& x, const std::vector<nlohmann::json>& runs, double threshold_pct,
                              const std::vector<std::string>* files) {
  if (!std::isfinite(threshold_pct) || threshold_pct < 0)
    throw std::invalid_argument(fmt::format("--baseline {}: the threshold must be a finite percentage >= 0, got {}", x.name, threshold_pct));
  BaselineDiff d;
  d.threshold_pct = threshold_pct;
  d.baseline_name = x.name;
  size_t order = 0;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const auto& res = runs[ri];
    const std::string sc = as_saved_json_text(text_of(res, "scenario"));
    const std::string file = files && ri < files->size() ? normal_path(as_saved_json_text((*files)[ri])) : std::string();
    const bool file_known = !file.empty() && x.seen_runs.count({file, sc});
    const auto n_runs = x.runs_of_scenario.find(sc);
    for (const auto& c : res["cases"]) {
      const std::string id = as_saved_json_text(text_of(c, "id"));
      double was = 0;
      bool found = false;
      if (file_known) {
        const auto it = x.by_file.find({file, sc, id});
        if ((found = it != x.by_file.end())) was = it->second;
      } else if (n_runs != x.runs_of_scenario.end() && n_runs->second == 1) {
        const auto it = x.by_scenario.find({sc, id});
        if ((found = it != x.by_scenario.end())) was = it->second;
      }
      if (!found) {
        d.not_in_baseline.push_back({sc, id});
        continue;
      }
      ++d.compared;
      const double now = c["predicted_us"].get<double>();
      const double change = (now - was) / was * 100;
      (std::fabs(change) > threshold_pct ? d.moved : d.within).push_back({sc, id, was, now, change, order++});
    }
  }
  return d;
}

}  // namespace fusesim::cli
