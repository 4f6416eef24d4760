#include "calibrate/measurements.hpp"


#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hw/hardware.hpp"
#include "hw/io.hpp"
#include "hw/json_limits.hpp"
#include "hw/name_pattern.hpp"
#include "hw/numbers.hpp"
#include "hw/printable.hpp"
#include "models/afd/timeline.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"

namespace fusesim::calibrate {
namespace fs = std::filesystem;
using hw::FileError;
using nlohmann::json;

namespace {

/// A record of one AFD median exchange time (us) from `file`, table `table`; the caller adds the
/// params, value, id, source and line.
Record afd_median_record(const std::string& file, const std::string& table) {
  Record r;
  r.kind = "afd";
  r.model = "afd";
  r.table = table;
  r.quantity = "median_us";
  r.unit = "us";
  r.file = file;
  return r;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }
std::string base_of(const std::string& path) { return fs::path(path).filename().string(); }

std::string table_of_case(const std::string& case_id) {
  const auto slash = case_id.find('/');
  return slash == std::string::npos ? case_id : case_id.substr(0, slash);
}

/// A JSON scalar as a YAML node of the same type.
YAML::Node yaml_scalar(const json& v) {
  if (v.is_boolean()) return YAML::Node(v.get<bool>());
  if (v.is_number_integer() || v.is_number_unsigned()) return YAML::Node(v.get<int64_t>());
  if (v.is_number_float()) return YAML::Node(v.get<double>());
  if (v.is_string()) return YAML::Node(v.get<std::string>());
  return YAML::Node(v.dump());
}

bool is_int_like(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

/// Python's json.dumps prints NaN and Infinity as bare literals, which JSON does not have: outside
/// strings they become the strings "NaN", "Infinity", "-Infinity" (is_nan_literal reads the first).
std::string quote_nan_literals(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  bool in_str = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_str) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
    auto lit = [&](const char* w) { return word_start && text.compare(i, std::strlen(w), w) == 0; };
    if (lit("NaN") || lit("-NaN")) {
      out += "\"NaN\"";
      i += text[i] == '-' ? 3 : 2;
      continue;
    }
    if (lit("Infinity") || lit("-Infinity")) {
      out += text[i] == '-' ? "\"-Infinity\"" : "\"Infinity\"";
      i += text[i] == '-' ? 8 : 7;
      continue;
    }
    out += c;
  }
  return out;
}

json parse_json_at(const std::string& text, const std::string& file, int line) {
  hw::check_json_limits(text, {file, line, ""});  // nesting and size, before the parser sees it
  try {
    if (text.find("NaN") != std::string::npos || text.find("Infinity") != std::string::npos) return hw::parse_json_unique_keys(quote_nan_literals(text));
    return hw::parse_json_unique_keys(text);
  } catch (const hw::DuplicateJsonKey& e) {
    throw FileError(file, line, e.key, e.what());
  } catch (const json::exception& e) {
    // A syntax error or a number out of the range of a double ("1e400", out_of_range 406): the file
    // and line, never nlohmann's bare message.
    throw FileError(file, line, "", hw::json_error_text(e));
  }
}

/// Numbers in a JSON object, with a type check naming the field.
double number_field(const json& obj, const std::string& key, const std::string& file, int line) {
  const auto& v = obj.at(key);
  if (!v.is_number()) throw FileError(file, line, key, fmt::format("expected a number, got {}", v.dump()));
  return v.get<double>();
}

/// The benchmark's knobs, as the gemm_ar model declares them (models::gemm_ar_case_schema), by kind.
std::vector<std::string> gemm_ar_knobs(models::CaseParam::Kind a, models::CaseParam::Kind b = models::CaseParam::Kind::Node) {
  std::vector<std::string> out;
  for (const auto& p : models::gemm_ar_case_schema().params())
    if (p.kind == a || p.kind == b) out.push_back(p.key);
  return out;
}

/// "1 2 3" line and position helpers for JSON documents.
int line_at(const std::string& text, size_t pos) {
  if (pos == std::string::npos) return 0;
  return 1 + int(std::count(text.begin(), text.begin() + std::min(pos, text.size()), '\n'));
}

}  // namespace

void ParseResult::append(ParseResult&& o) {
  for (auto& r : o.records) records.push_back(std::move(r));
  for (auto& w : o.warnings) warnings.push_back(std::move(w));
}

std::string canonical_params(const YAML::Node& params) {
  std::map<std::string, std::string> m;
  if (params && params.IsMap())
    for (auto it = params.begin(); it != params.end(); ++it) {
      YAML::Emitter e;
      e << YAML::Flow << it->second;
      m[it->first.as<std::string>()] = e.c_str();
    }
  std::string out = "{";
  for (const auto& [k, v] : m) out += (out.size() > 1 ? ", " : "") + k + ": " + v;
  return out + "}";
}

// ---------------------------------------------------------------------------------------------
// RESULT_JSON (the benchmark) and failure records (calibrate mori)

namespace {
/// Levenshtein distance (insertions, deletions, substitutions), for "did you mean" checks.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return d[b.size()];
}

/// The marker parse_json_at puts where the benchmark printed a bare NaN literal (Python's json.dumps).
bool is_nan_literal(const json& v) { return v.is_string() && v.get<std::string>() == "NaN"; }

/// Keys the benchmarks print that are metadata (not parameters): exempt from the typo check, kept in extra.
const std::set<std::string>& printed_metadata() {
  static const std::set<std::string> s{"block_n",       "label",          "critical_rank",  "per_rank_time_us", "max_rank_time_ms",
                                       "rel_l2",        "validated",      "resolved_tile_order", "payload_bytes", "slice_bytes",
                                       "threads",       "remote_bytes_per_rank", "aggregate_gbps", "run_key", "fusesim_commit",
                                       "wall_s",        "exit_code",      "output_tail",    "layout"};
  return s;
}

/// Row bands per destination rank: M padded to world_size x BLOCK_M, over world_size, over BLOCK_M.
int64_t bands_per_destination(int64_t m, int64_t ws, int64_t bm) {
  const int64_t unit = ws * bm;
  return (m + unit - 1) / unit * unit / ws / bm;
}

bool row_skipped_validation(const json& obj) {
  if (obj.contains("skip_validation") && obj["skip_validation"].is_boolean() && obj["skip_validation"].get<bool>()) return true;
  if (obj.contains("argv") && obj["argv"].is_array())
    for (const auto& a : obj["argv"])
      if (a == "--skip-validation") return true;
  return false;
}

/// An empty record of `model` read from a RESULT_JSON line at file:line: its time is the line's
/// max_rank_time_us (us), what every mori benchmark prints.
Record result_json_record(const std::string& model, const std::string& file, int line) {
  Record r;
  r.kind = model;
  r.model = model;
  r.quantity = "max_rank_time_us";
  r.unit = "us";
  r.file = file;
  r.line = line;
  r.params = YAML::Node(YAML::NodeType::Map);
  return r;
}
}  // namespace

std::string detect_result_json_layout(const json& obj) {
  for (const char* k : {"gather_dtype", "gather_transport", "gather_bands", "publish"})
    if (obj.contains(k)) return "ad271d19";
  if (obj.contains("quant")) return "103655f6";
  return "old";
}

Record record_from_result_json(const json& obj, const std::string& file, int line, const std::string& stated_layout) {
  if (!obj.is_object()) throw FileError(file, line, "", "expected a JSON object after RESULT_JSON");
  if (obj.contains("backend") && !obj.contains("mode")) return record_from_bench_ar(obj, file, line);
  Record r = result_json_record("gemm_ar", file, line);
  // The layout: recognised by its key set, or stated (--layout, "# layout: X"), which must agree with it.
  std::string layout = detect_result_json_layout(obj);
  {
    std::string st = stated_layout.empty() ? "auto" : stated_layout;
    // `calibrate mori --layout X` records the layout with each line.
    if (st == "auto" && obj.contains("layout") && obj["layout"].is_string()) st = obj["layout"].get<std::string>();
    if (st == "6022ecfa" || st == "9aaef3e9") st = "ad271d19";
    static const std::set<std::string> known{"auto", "16ddbb94", "0b26ebf8", "103655f6", "ad271d19"};
    if (!known.count(st))
      throw FileError(file, line, "layout", fmt::format("unknown RESULT_JSON layout '{}' (expected auto, 16ddbb94, 0b26ebf8, "
                                                        "103655f6, 6022ecfa or ad271d19)", st));
    if (st != "auto") {
      const bool old = st == "16ddbb94" || st == "0b26ebf8";
      if ((old && layout != "old") || (st == "103655f6" && layout == "ad271d19"))
        throw FileError(file, line, "layout", fmt::format("stated layout {} but the row prints {} (a key layout {} did not print)", st,
                                                          layout == "ad271d19" ? "gather keys" : "quant", st));
      layout = st;
    }
  }
  const bool old_layout = layout == "old" || layout == "16ddbb94" || layout == "0b26ebf8";
  r.extra["layout"] = layout == "old" ? "16ddbb94 or 0b26ebf8" : layout;
  using Kind = models::CaseParam::Kind;
  for (const auto& k : gemm_ar_knobs(Kind::Integer, Kind::Integer64)) {
    if (!obj.contains(k) || obj[k].is_null()) continue;
    if (!is_int_like(obj[k])) throw FileError(file, line, k, fmt::format("expected an integer, got {}", obj[k].dump()));
    r.params[k] = hw::to_int(obj[k].get<double>(), {file, line, k});
  }
  for (const auto& k : gemm_ar_knobs(Kind::Name)) {
    if (!obj.contains(k) || obj[k].is_null()) continue;
    if (!obj[k].is_string()) throw FileError(file, line, k, fmt::format("expected a string, got {}", obj[k].dump()));
    r.params[k] = obj[k].get<std::string>();
  }
  for (const auto& k : gemm_ar_knobs(Kind::Flag)) {
    if (!obj.contains(k) || obj[k].is_null()) continue;
    if (!obj[k].is_boolean()) throw FileError(file, line, k, fmt::format("expected true or false, got {}", obj[k].dump()));
    r.params[k] = obj[k].get<bool>();
  }
  // The pull grid comes from the environment (MORI_GEMM_AR_PULL_BLOCKS) when the record has one.
  if (!r.params["pull_blocks"] && obj.contains("env") && obj["env"].is_object() && obj["env"].contains("MORI_GEMM_AR_PULL_BLOCKS")) {
    const auto& v = obj["env"]["MORI_GEMM_AR_PULL_BLOCKS"];
    try {
      r.params["pull_blocks"] = hw::parse_int(v.is_string() ? v.get<std::string>() : v.dump(), {file, line, "env.MORI_GEMM_AR_PULL_BLOCKS"});
    } catch (const std::exception&) {
      throw FileError(file, line, "env.MORI_GEMM_AR_PULL_BLOCKS", fmt::format("expected an integer, got {}", v.dump()));
    }
  }
  static const std::set<std::string> consumed = [] {
    std::set<std::string> c{"max_rank_time_us", "table", "id", "source"};
    for (const auto& p : models::gemm_ar_case_schema().params()) c.insert(p.key);
    for (const char* k : {"block_m", "fence", "swap_ab", "permlane", "lane_transpose", "atomic_order", "stop_after", "timing"}) c.insert(k);
    return c;
  }();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (consumed.count(it.key())) continue;
    // Other fields are kept as metadata (the benchmark prints many); one that is a near-miss of a
    // parameter's name is a typo that would silently fit the point at that parameter's default.
    if (!printed_metadata().count(it.key()))
      for (const auto& p : consumed)
        if (p.size() >= 4 && p != "table" && p != "source" && edit_distance(it.key(), p) <= 2)
          throw FileError(file, line, it.key(), fmt::format("is not a gemm_ar field; did you mean '{}'? (a misspelled parameter "
                                                            "would leave the point at that parameter's default)", p));
    r.extra[it.key()] = it.value();
  }
  r.table = obj.contains("table") && obj["table"].is_string() ? obj["table"].get<std::string>() : stem_of(file);
  r.id = obj.contains("id") && obj["id"].is_string() ? obj["id"].get<std::string>() : fmt::format("{}:{}", base_of(file), line);
  r.source = obj.contains("source") && obj["source"].is_string() ? obj["source"].get<std::string>() : fmt::format("{}:{}", file, line);
  auto reject = [&](std::string why) {
    r.rejected = true;
    r.reason = std::move(why);
    return r;
  };
  // Rejections, in order of precedence.
  if (obj.contains("failure") && !obj["failure"].is_null()) {
    r.kind = "failure";
    return reject("failed run: " + (obj["failure"].is_string() ? obj["failure"].get<std::string>() : obj["failure"].dump()));
  }
  const std::string mode = r.params["mode"] ? r.params["mode"].as<std::string>() : std::string("fused-sdma");
  const bool composite = mode != "gemm-only";
  // The shape the row bands are counted from (bands_per_destination divides by world_size): a row
  // with world_size 0 had divided by zero (found by fuzz_measurements), a huge m overflowed.
  const bool sdma_mode = composite && (mode == "split-sdma" || mode == "fused-sdma");
  const int64_t ws = sdma_mode && r.params["world_size"] ? r.params["world_size"].as<int64_t>() : 8;
  const int64_t m = sdma_mode && r.params["m"] ? r.params["m"].as<int64_t>() : 16384;
  if (sdma_mode && (ws < 1 || ws > 1024)) return reject(fmt::format("world_size: {} is outside 1..1024", ws));
  if (sdma_mode && (m < 1 || m > (int64_t(1) << 40))) return reject(fmt::format("m: {} is outside 1..2^40", m));
  // What the layout ran when the row does not say (data README's table of layouts by commit).
  if (old_layout) {
    // 16ddbb94 and 0b26ebf8 had no --quant: ptpc operands (BLOCK_M 256); no gather flags: the bf16 wire over SDMA.
    if (!r.params["quant"]) {
      r.params["quant"] = "ptpc";
      r.extra["quant_from_layout"] = "ptpc (layouts 16ddbb94 and 0b26ebf8 had no --quant and ran ptpc operands, BLOCK_M 256)";
    }
    if (composite && !r.params["gather_dtype"]) {
      r.params["gather_dtype"] = "bf16";
      r.params["gather_transport"] = "sdma";
      r.extra["wire_from_layout"] = "bf16 over sdma (16ddbb94 and 0b26ebf8 had no gather flags: the bf16 wire over SDMA)";
    }
    if (sdma_mode) {
      const int64_t bands = bands_per_destination(m, ws, 256);
      const bool printed = r.params["chunks"].IsDefined();
      const int64_t c = printed ? r.params["chunks"].as<int64_t>() : -1;
      if (c == 0 || (!printed && layout == "16ddbb94")) {
        r.params["chunks"] = bands;  // 0 = one push per row band
        r.extra["chunks_from_layout"] = fmt::format("{} (chunks 0 at 16ddbb94: one push per row band, {} row bands per destination)",
                                                    bands, bands);
      } else if (!printed && layout == "0b26ebf8") {
        r.params["chunks"] = 1;
        r.extra["chunks_from_layout"] = "1 (the --chunks default at 0b26ebf8)";
      } else if (!printed) {
        return reject("chunks: the row prints no chunks and no quant (layout 16ddbb94 or 0b26ebf8), whose chunk defaults differ "
                      "(0 = one push per row band at 16ddbb94, 1 at 0b26ebf8): state the layout with --layout or a "
                      "'# layout: 16ddbb94' line");
      }
    }
  } else if (layout == "103655f6") {
    // fuse_quantize was on by default; no gather flags were printed.
    if (!r.params["fuse_quantize"]) {
      r.params["fuse_quantize"] = true;
      r.extra["fuse_quantize_from_layout"] = "true (the --fuse-quantize default at 103655f6)";
    }
    if (composite && !r.params["gather_dtype"]) {
      if (!r.params["fuse_quantize"].as<bool>())
        return reject("gather_dtype: layout 103655f6 prints no wire and fuse_quantize is false, so nothing in the row says which "
                      "wire ran");
      // A quantize step exists only on the fp8 wire (GEMM_AR.md): fuse_quantize on means that wire, over SDMA.
      r.params["gather_dtype"] = "fp8";
      r.params["gather_transport"] = "sdma";
      r.extra["wire_from_layout"] = "fp8 over sdma (103655f6 prints no wire; fuse_quantize, on, folds the fp8 wire's quantize "
                                    "into the reduce, and SDMA was the only gather transport printed before 6022ecfa)";
    }
  } else {
    // Today's layout: gather_bands 8 by default, chunks null = the --chunks default 8.
    if (r.params["fuse_reduce_push"] && r.params["fuse_reduce_push"].as<bool>() && !r.params["gather_bands"]) r.params["gather_bands"] = 8;
  }
  if (sdma_mode && !r.params["chunks"] && !old_layout) r.params["chunks"] = 8;
  // 103655f6 .. ad271d19 lower chunks by halving until they divide the row bands per destination
  // (data README: 8 becomes 4 at 12 bands, not 6): the case states the chunks that ran.
  if (!old_layout && sdma_mode && r.params["chunks"]) {
    const std::string q = r.params["quant"] ? r.params["quant"].as<std::string>() : std::string("blockscale");
    const int64_t bands = bands_per_destination(m, ws, q == "blockscale" ? 128 : 256);
    int64_t c = r.params["chunks"].as<int64_t>();
    const int64_t printed = c;
    while (c > 1 && bands % c) c /= 2;
    if (c != printed) {
      r.extra["chunks_printed"] = printed;
      r.params["chunks"] = c;
    }
  }
  // Keys that changed what ran: modelled (tile_order from resolved_tile_order, block_m checked against
  // the route's BLOCK_M), or the row is refused naming the key. Defaults are what gemm_ar describes:
  // the values printed by the public sweep (sweep_dsv41.jsonl @9aaef3e9), which its gemm keys are fitted on.
  if (obj.contains("resolved_tile_order") && obj["resolved_tile_order"].is_string()) {
    if (r.params["tile_order"]) r.extra["tile_order_printed"] = r.params["tile_order"].as<std::string>();
    r.params["tile_order"] = obj["resolved_tile_order"].get<std::string>();
  }
  if (r.params["tile_order"] && r.params["tile_order"].as<std::string>() == "auto")
    return reject("tile_order: 'auto' without resolved_tile_order: the row does not say which tile order ran (rotated or linear)");
  const std::string quant = r.params["quant"] ? r.params["quant"].as<std::string>() : std::string("blockscale");
  if (obj.contains("block_m") && !obj["block_m"].is_null()) {
    const int want = quant == "blockscale" ? 128 : 256;
    if (!is_int_like(obj["block_m"]) || obj["block_m"].get<double>() != want)
      return reject(fmt::format("block_m: {} is not the BLOCK_M gemm_ar models for quant {} ({}); another tile height is "
                                "another kernel, not modelled", obj["block_m"].dump(), quant, want));
  }
  struct Fixed {
    const char* key;
    json want;
    const char* why;
  };
  static const std::vector<Fixed> fixed{
      {"fence", json(), "a scatter fence variant gemm_ar does not model (it models the default, null)"},
      {"swap_ab", true, "the GEMM kernel variant; gemm_ar's GEMM costs describe swap_ab true"},
      {"permlane", true, "the GEMM epilogue's lane permutation; gemm_ar's GEMM costs describe permlane true"},
      {"lane_transpose", true, "the GEMM epilogue's lane transpose; gemm_ar's GEMM costs describe lane_transpose true"},
      {"atomic_order", "acq_rel", "the signals' memory order; gemm_ar models acq_rel"},
      {"stop_after", "all", "the run stopped early (stop_after 'scatter' times the scatter alone), not a whole gemm_ar call"},
      {"timing", "graph", "eager launches (not graph replay) add launch gaps gemm_ar does not model"}};
  for (const auto& f : fixed) {
    if (!obj.contains(f.key)) continue;
    const json& v = obj[f.key];
    if (v != f.want && !(f.want.is_null() && v.is_null()))
      return reject(fmt::format("{}: {} changes what ran and is not modelled ({}; gemm_ar describes {})", f.key, v.dump(), f.why,
                                f.want.dump()));
  }
  // Knobs that do not apply to the row's mode (the benchmark always prints them): set to the model's
  // default, the printed value kept in extra.ignored.
  {
    const models::GemmArConfig dflt;
    auto ignore = [&](const char* key, const YAML::Node& d) {
      if (!r.params[key]) return;
      YAML::Emitter a, b;
      a << YAML::Flow << r.params[key];
      b << YAML::Flow << d;
      if (std::string(a.c_str()) != b.c_str()) r.extra["ignored"][key] = r.params[key].as<std::string>();
      r.params[key] = d;
    };
    const bool fp8 = r.params["gather_dtype"] && r.params["gather_dtype"].as<std::string>() == "fp8";
    const bool frp = r.params["fuse_reduce_push"] && r.params["fuse_reduce_push"].as<bool>();
    if (!composite) {
      ignore("chunks", YAML::Node(dflt.chunks));
      ignore("sdma_queues", YAML::Node(dflt.sdma_queues));
      ignore("gather_dtype", YAML::Node(dflt.gather_dtype));
      ignore("gather_transport", YAML::Node(dflt.gather_transport));
      ignore("fuse_quantize", YAML::Node(dflt.fuse_quantize));
      ignore("fuse_reduce_push", YAML::Node(dflt.fuse_reduce_push));
    }
    if (!composite || !fp8) ignore("fuse_quantize", YAML::Node(dflt.fuse_quantize));
    // The bf16 wire always gathers over SDMA; the benchmark may still print its default transport.
    if (r.params["gather_transport"] && !fp8 && r.params["gather_transport"].as<std::string>() != "sdma") {
      r.extra["gather_transport_printed"] = r.params["gather_transport"].as<std::string>();
      r.params["gather_transport"] = "sdma";
    }
    const bool pull = fp8 && r.params["gather_transport"] && r.params["gather_transport"].as<std::string>() == "lsa";
    if (!composite || !pull) ignore("pull_blocks", YAML::Node(dflt.pull_blocks));
    if (!composite || !frp) {
      ignore("gather_bands", YAML::Node(dflt.gather_bands));
      ignore("publish", YAML::Node(dflt.publish));
    }
  }
  if (!obj.contains("max_rank_time_us") || obj["max_rank_time_us"].is_null()) return reject("no max_rank_time_us");
  if (is_nan_literal(obj["max_rank_time_us"])) return reject("max_rank_time_us is NaN");
  r.value = number_field(obj, "max_rank_time_us", file, line);
  // rel_l2 NaN (the benchmark prints a bare NaN when it skips validation): accepted where the run did
  // not validate, refused where it should have.
  const bool nan_l2 = obj.contains("rel_l2") && is_nan_literal(obj["rel_l2"]);
  std::string no_check;
  if (old_layout && !composite) no_check = "gemm-only rows of layouts 16ddbb94 and 0b26ebf8 are not validated";
  else if (row_skipped_validation(obj)) no_check = "the run passed --skip-validation";
  if (nan_l2) {
    if (no_check.empty())
      return reject(fmt::format("rel_l2: NaN where mode {} validates (layout {}): the check produced no number; the output "
                                "holds a NaN or the check failed", mode, r.extra["layout"].get<std::string>()));
    r.extra["not_validated"] = no_check;
  } else if (obj.contains("validated") && !obj["validated"].is_null()) {
    if (!obj["validated"].is_boolean()) throw FileError(file, line, "validated", "expected true or false");
    if (!obj["validated"].get<bool>()) return reject("validated: false (the output did not match the reference)");
  }
  if (!nan_l2 && obj.contains("rel_l2") && !obj["rel_l2"].is_null()) {
    const double l2 = number_field(obj, "rel_l2", file, line);
    if (!(l2 <= kMovedNothingRelL2))
      return reject(fmt::format("rel_l2 {:.3g} > {}: the collective moved nothing (output is mostly the local slice or zeros; "
                                "a build without the SDMA path?)",
                                l2, kMovedNothingRelL2));
  }
  if (!(r.value > 0) || !std::isfinite(r.value)) return reject(fmt::format("max_rank_time_us {} is not a positive time", r.value));
  return r;
}

Record record_from_bench_ar(const json& obj, const std::string& file, int line) {
  if (!obj.is_object()) throw FileError(file, line, "", "expected a JSON object after RESULT_JSON");
  Record r = result_json_record("collective", file, line);
  r.extra["layout"] = "bench_ar.py";
  auto str = [&](const char* k) {
    if (!obj[k].is_string()) throw FileError(file, line, k, fmt::format("expected a string, got {}", obj[k].dump()));
    return obj[k].get<std::string>();
  };
  auto integer = [&](const char* k) {
    if (!is_int_like(obj[k])) throw FileError(file, line, k, fmt::format("expected an integer, got {}", obj[k].dump()));
    return hw::to_int(obj[k].get<double>(), {file, line, k});
  };
  r.params["op"] = obj.contains("op") && !obj["op"].is_null() ? str("op") : std::string("all-reduce");
  std::string backend = str("backend");
  if (backend == "nccl") {
    r.extra["backend_printed"] = backend;
    backend = "rccl";  // mori's bench calls the library ring nccl
  }
  r.params["backend"] = backend;
  if (!obj.contains("m") || obj["m"].is_null()) throw FileError(file, line, "m", "a bench_ar.py line needs m (rows)");
  r.params["m"] = integer("m");
  for (const char* k : {"n", "world_size"})
    if (obj.contains(k) && !obj[k].is_null()) r.params[k] = integer(k);
  if (obj.contains("dtype") && !obj["dtype"].is_null()) r.params["dtype"] = str("dtype");
  // LSA's stage and grid are what ran (the benchmark's own size rule chose them): the case states them.
  const bool cu = backend == "lsa" || backend == "aiter";
  if (obj.contains("stage") && !obj["stage"].is_null()) {
    if (cu) r.params["stage"] = integer("stage");
    else r.extra["stage"] = obj["stage"];
  }
  if (obj.contains("blocks") && !obj["blocks"].is_null()) {
    if (cu) r.params["blocks"] = integer("blocks");
    else r.extra["blocks"] = obj["blocks"];
  }
  if (obj.contains("build") && !obj["build"].is_null()) r.params["build"] = str("build");
  static const std::set<std::string> consumed{"op", "backend", "m", "n", "world_size", "dtype", "stage", "blocks", "build",
                                              "max_rank_time_us", "table", "id", "source"};
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!consumed.count(it.key())) r.extra[it.key()] = it.value();
  r.table = obj.contains("table") && obj["table"].is_string() ? obj["table"].get<std::string>() : stem_of(file);
  r.id = obj.contains("id") && obj["id"].is_string() ? obj["id"].get<std::string>()
                                                     : fmt::format("{}/m={}@{}:{}", backend, r.params["m"].as<int64_t>(), base_of(file), line);
  r.source = obj.contains("source") && obj["source"].is_string() ? obj["source"].get<std::string>() : fmt::format("{}:{}", file, line);
  auto reject = [&](std::string why) {
    r.rejected = true;
    r.reason = std::move(why);
    return r;
  };
  if (obj.contains("failure") && !obj["failure"].is_null()) {
    r.kind = "failure";
    return reject("failed run: " + (obj["failure"].is_string() ? obj["failure"].get<std::string>() : obj["failure"].dump()));
  }
  if (obj.contains("timing") && obj["timing"].is_string() && obj["timing"].get<std::string>() != "graph")
    return reject(fmt::format("timing: '{}' changes what ran and is not modelled (eager launches add gaps the collective "
                              "model does not describe; it describes graph replay)", obj["timing"].get<std::string>()));
  // The time: max_rank_time_us, else max_rank_time_ms (the same number in ms, also printed).
  if (obj.contains("max_rank_time_us") && !obj["max_rank_time_us"].is_null() && !is_nan_literal(obj["max_rank_time_us"])) {
    r.value = number_field(obj, "max_rank_time_us", file, line);
  } else if (obj.contains("max_rank_time_ms") && obj["max_rank_time_ms"].is_number()) {
    r.value = 1000.0 * obj["max_rank_time_ms"].get<double>();
    r.extra["value_from"] = "max_rank_time_ms x 1000";
  } else {
    return reject("no max_rank_time_us (nor max_rank_time_ms)");
  }
  const bool nan_l2 = obj.contains("rel_l2") && is_nan_literal(obj["rel_l2"]);
  if (nan_l2) {
    if (!row_skipped_validation(obj))
      return reject("rel_l2: NaN where bench_ar.py validates: the check produced no number; the output holds a NaN or the check failed");
    r.extra["not_validated"] = "the run passed --skip-validation";
  } else if (obj.contains("validated") && obj["validated"].is_boolean() && !obj["validated"].get<bool>()) {
    return reject("validated: false (the output did not match the reference)");
  }
  if (!nan_l2 && obj.contains("rel_l2") && obj["rel_l2"].is_number() && !(obj["rel_l2"].get<double>() <= kMovedNothingRelL2))
    return reject(fmt::format("rel_l2 {:.3g} > {}: the collective moved nothing (a build without the SDMA path?)",
                              obj["rel_l2"].get<double>(), kMovedNothingRelL2));
  if (!(r.value > 0) || !std::isfinite(r.value)) return reject(fmt::format("max_rank_time_us {} is not a positive time", r.value));
  return r;
}

std::string run_validation_problem(const json& obj) {
  const Record r = record_from_result_json(obj, "(run output)", 0, "auto");
  if (!r.rejected) return "";
  // Refusals of what ran (a key gemm_ar does not model) are still measurements of the benchmark:
  // only a check that failed, or moved nothing, is a failed run.
  for (const char* k : {"validated: false", "moved nothing", "rel_l2: NaN", "no max_rank_time", "not a positive time", "is NaN"})
    if (r.reason.find(k) != std::string::npos) return r.reason;
  return "";
}

namespace {
/// "# layout: 16ddbb94" states the RESULT_JSON layout of the lines that follow; empty when `t` is not such a line.
std::string layout_line(const std::string& t) {
  static const hw::NamePattern re = hw::NamePattern::compile(R"(#+\s*layout\s*:\s*(\S+)\s*)", "layout line", false);
  std::string layout;
  return re.full_match(t) && re.search(t, &layout, 1) ? layout : std::string();
}
}  // namespace

json parse_benchmark_json(const std::string& text, const std::string& file, int line) { return parse_json_at(text, file, line); }

ParseResult parse_result_json_stream(std::istream& in, const std::string& file, const std::string& layout_in) {
  ParseResult out;
  std::string text, layout = layout_in;
  int line = 0, noise = 0;
  while (std::getline(in, text)) {
    ++line;
    const auto at = text.find("RESULT_JSON");
    if (at == std::string::npos) {
      if (const auto l = layout_line(trim(text)); !l.empty()) layout = l;
      else if (!trim(text).empty()) ++noise;
      continue;
    }
    const auto brace = text.find('{', at);
    if (brace == std::string::npos) throw FileError(file, line, "RESULT_JSON", "no JSON object after RESULT_JSON");
    out.records.push_back(record_from_result_json(parse_json_at(text.substr(brace), file, line), file, line, layout));
  }
  if (noise) out.warnings.push_back(fmt::format("{}: skipped {} line(s) without RESULT_JSON (log output)", file, noise));
  return out;
}

// ---------------------------------------------------------------------------------------------
// AFD transport lines and seed-004 documents

YAML::Node afd_context_from_header(const std::string& header, const std::string& file, int line) {
  YAML::Node ctx(YAML::NodeType::Map);
  // Bounded before any pattern runs (the patterns are RE2's, linear; a header is one line of a log).
  constexpr size_t kMaxHeaderBytes = 1024;
  if (header.size() > kMaxHeaderBytes)
    throw FileError(file, line, "", fmt::format("a header line of {} bytes is longer than the {} bytes allowed", header.size(), kMaxHeaderBytes));
  auto count = [&](const std::string& text, const char* key) { return hw::parse_int(text, {file, line, key}, 0, 1 << 30); };
  std::string m[2];
  auto pattern = [](const std::string& text) { return hw::NamePattern::compile(text, "AFD header pattern", false); };
  // A ranks ratio is a word of its own ("4F:8A", "4f8a", "1a3f"): preceded by the line's start, a
  // blank or an opening bracket and followed by its end, a blank, a comma or a closing bracket, so
  // "-2F:2A" or "3F:1A:7F" are not read as 2F:2A and 3F:1A (issue 22's second trial).
  static const std::string w0 = R"((?:^|[\s#(\[,;]))", w1 = R"((?:$|[\s)\],;]))";
  static const hw::NamePattern fa = pattern(w0 + R"((\d+)\s*[Ff]\s*:\s*(\d+)\s*[Aa])" + w1),
                               f_a = pattern(w0 + R"((\d+)f(\d+)a)" + w1), a_f = pattern(w0 + R"((\d+)a(\d+)f)" + w1),
                               // Whatever looks like an NF:MA ratio, well formed or not: a digit, F or A,
                               // a colon (the compact forms are only read as whole words: "3a4f" inside
                               // a commit hash in a comment is not a ratio).
                               ratio_like = pattern(R"(\d\s*[FfAa]\s*:)"),
                               sms = pattern(R"(num-sms(\s*\S*))"), sms_key = pattern(R"(num-sms)"),
                               hybrid = pattern(R"(\bhybrid(\s*\S*))"), hybrid_key = pattern(R"(\bhybrid\b)"),
                               tok = pattern(R"(\bT\s*=(\s*\S*))"), tok_key = pattern(R"(\bT\s*=)"),
                               path = pattern(R"(\b(afd|masked)\s*$)");
  // Each key at most once: a header naming two rank ratios or two SM counts is ambiguous, and the
  // first one had been taken silently.
  const std::string shown = hw::printable(header.substr(0, 120));
  if (const size_t n = ratio_like.count(header) + f_a.count(header) + a_f.count(header); n > 1)
    throw FileError(file, line, "ffn_ranks", fmt::format("the header holds {} rank ratios; expected one (NF:MA, NfMa or MaNf): '{}'", n, shown));
  if (ratio_like.search(header) && !fa.search(header))
    throw FileError(file, line, "ffn_ranks", fmt::format("expected a rank ratio as a word of its own, NF:MA (e.g. 4F:8A), NfMa or MaNf with N "
                                                         "and M whole numbers; got '{}'", shown));
  for (const auto& [key_pattern, key] : {std::pair{&sms_key, "num-sms"}, {&hybrid_key, "hybrid"}, {&tok_key, "T="}})
    if (const size_t n = key_pattern->count(header); n > 1)
      throw FileError(file, line, key, fmt::format("'{}' appears {} times in the header; expected once: '{}'", key, n, shown));
  if (fa.search(header, m, 2) || f_a.search(header, m, 2)) {
    ctx["ffn_ranks"] = count(m[0], "ffn_ranks");
    ctx["attention_ranks"] = count(m[1], "attention_ranks");
  } else if (a_f.search(header, m, 2)) {
    ctx["attention_ranks"] = count(m[0], "attention_ranks");
    ctx["ffn_ranks"] = count(m[1], "ffn_ranks");
  }
  // A key's value is the whole word after it, parsed strictly: "num-sms 1e300", "24.5", "0x18", "-5"
  // or "NaN" had been read as 1, 24, 0 or nothing at all, and "hybrid maybe" ignored (issue 22).
  if (sms.search(header, m, 1)) ctx["transport_sms"] = count(trim(m[0]), "num-sms");
  if (hybrid.search(header, m, 1)) {
    const std::string v = trim(m[0]);
    if (v != "on" && v != "off")
      throw FileError(file, line, "hybrid", fmt::format("expected on or off after 'hybrid', got '{}'", hw::printable(v.substr(0, 40))));
    ctx["hybrid"] = v;
  }
  if (tok.search(header, m, 1)) ctx["tokens"] = count(trim(m[0]), "T");
  if (path.search(header, m, 1)) ctx["path"] = m[0];
  return ctx;
}

std::vector<Record> records_from_afd_line(const json& obj, const YAML::Node& context, const std::string& table,
                                          const std::string& file, int line) {
  if (!obj.is_object() || !obj.contains("tokens") || !is_int_like(obj["tokens"]))
    throw FileError(file, line, "tokens", "an AFD line needs an integer \"tokens\"");
  const int64_t tokens = hw::to_int(obj["tokens"].get<double>(), {file, line, "tokens"}, 1, int64_t(1) << 40);
  std::vector<Record> out;
  for (const char* path : {"afd", "masked"}) {
    if (!obj.contains(path)) continue;
    const auto& a = obj[path];
    if (!a.is_array() || a.empty() || !a[0].is_number() || !(a[0].get<double>() > 0))
      throw FileError(file, line, path, fmt::format("expected [median_us, change_pct, repeats_faster], got {}", a.dump()));
    Record r = afd_median_record(file, table);
    r.line = line;
    r.params = YAML::Node(YAML::NodeType::Map);
    if (context && context.IsMap())
      for (auto it = context.begin(); it != context.end(); ++it) r.params[it->first.as<std::string>()] = YAML::Clone(it->second);
    r.params["path"] = std::string(path);
    r.params["tokens"] = tokens;
    r.value = a[0].get<double>();
    if (a.size() > 1) r.extra["change_pct"] = a[1];
    if (a.size() > 2) r.extra["repeats_faster"] = a[2];
    r.id = fmt::format("{}/{}/tokens={}{}", table, path, tokens,
                       r.params["transport_sms"] ? fmt::format("/sms={}", r.params["transport_sms"].as<std::string>()) : "");
    r.source = fmt::format("{}:{}", file, line);
    out.push_back(std::move(r));
  }
  if (out.empty()) throw FileError(file, line, "", "an AFD line needs an \"afd\" or \"masked\" array");
  return out;
}

Record record_from_probe(const json& obj, const std::string& file, int line) {
  if (!obj.is_object() || !obj.contains("probe") || !obj["probe"].is_string())
    throw FileError(file, line, "probe", "a probe line needs a string \"probe\"");
  Record r;
  r.kind = "probe";
  r.file = file;
  r.line = line;
  r.params = YAML::Node(YAML::NodeType::Map);
  const std::string probe = obj["probe"].get<std::string>();
  std::string vkey;
  for (const char* k : {"time_us", "us", "GBps", "TFLOPs", "value"})
    if (obj.contains(k) && obj[k].is_number()) { vkey = k; break; }
  if (vkey.empty()) throw FileError(file, line, probe, "a probe line needs a value: time_us, us, GBps, TFLOPs or value");
  r.value = obj[vkey].get<double>();
  r.unit = vkey == "time_us" ? "us" : vkey == "value" ? (obj.contains("unit") && obj["unit"].is_string() ? obj["unit"].get<std::string>() : "") : vkey;
  r.quantity = probe + "." + vkey;
  static const std::set<std::string> meta{"probe", "machine", "command", "commit", "date", "unit", "per_rank_time_us", "rel_l2", "validated"};
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() == vkey) continue;
    if (meta.count(it.key()) || !it.value().is_primitive() || it.value().is_null()) r.extra[it.key()] = it.value();
    else r.params[it.key()] = yaml_scalar(it.value());
  }
  r.table = probe;
  r.id = fmt::format("{}@{}:{}", probe, base_of(file), line);
  r.source = fmt::format("{}:{}", file, line);
  if (obj.contains("validated") && obj["validated"].is_boolean() && !obj["validated"].get<bool>()) {
    r.rejected = true;
    r.reason = "validated: false (the output did not match the reference)";
  } else if (obj.contains("rel_l2") && obj["rel_l2"].is_number() && !(obj["rel_l2"].get<double>() <= kMovedNothingRelL2)) {
    r.rejected = true;
    r.reason = fmt::format("rel_l2 {:.3g} > {}: the collective moved nothing", obj["rel_l2"].get<double>(), kMovedNothingRelL2);
  }
  return r;
}

ParseResult parse_jsonl_stream(std::istream& in, const std::string& file, const std::string& layout_in) {
  ParseResult out;
  std::string text, layout = layout_in;
  int line = 0;
  YAML::Node ctx(YAML::NodeType::Map);
  std::string table = stem_of(file);
  while (std::getline(in, text)) {
    ++line;
    const std::string t = trim(text);
    if (t.empty()) continue;
    if (t[0] == '#') {
      if (const auto l = layout_line(t); !l.empty()) {
        layout = l;
        continue;
      }
      // "#### 4F:4A num-sms 8" style headers set the AFD context for the lines that follow.
      const auto c = afd_context_from_header(t, file, line);
      if (c.size() > 0) {
        ctx = c;
        table = stem_of(file) + ":" + trim(t.substr(t.find_first_not_of('#')));
      }
      continue;
    }
    const auto at = t[0] == '{' ? std::string::npos : t.find("RESULT_JSON");
    if (at != std::string::npos) {
      const auto brace = t.find('{', at);
      if (brace == std::string::npos) throw FileError(file, line, "RESULT_JSON", "no JSON object after RESULT_JSON");
      out.records.push_back(record_from_result_json(parse_json_at(t.substr(brace), file, line), file, line, layout));
      continue;
    }
    if (t[0] != '{') {
      out.warnings.push_back(fmt::format("{}:{}: skipped a line that is not JSON: '{}'", file, line, hw::printable(t.substr(0, 60))));
      continue;
    }
    const json obj = parse_json_at(t, file, line);
    if (!obj.is_object()) throw FileError(file, line, "", "expected a JSON object");
    if (obj.contains("probe")) out.records.push_back(record_from_probe(obj, file, line));
    // A gemm_ar record without its time (it names a mode) is rejected with that reason, as the README
    // says, rather than called a layout nobody knows.
    // A bench_ar.py line (a backend, no mode) -> a collective record.
    else if (obj.contains("backend") && !obj.contains("mode"))
      out.records.push_back(record_from_bench_ar(obj, file, line));
    else if (obj.contains("max_rank_time_us") || obj.contains("failure") || obj.contains("mode"))
      out.records.push_back(record_from_result_json(obj, file, line, layout));
    else if (obj.contains("tokens") && (obj.contains("afd") || obj.contains("masked"))) {
      for (auto& r : records_from_afd_line(obj, ctx, table, file, line)) out.records.push_back(std::move(r));
    } else {
      throw FileError(file, line, "", "JSON object of no known layout (expected RESULT_JSON fields with max_rank_time_us, "
                                      "a \"probe\" line, or an AFD line with tokens and afd/masked)");
    }
  }
  return out;
}

namespace {

struct AfdDoc {
  const std::string& text;
  const std::string& file;
  int default_sms = 0;
  double phase_weight = 0.5;  ///< weight of the kernel-duration records
  /// Experts from the setup line ("top-k 8 of 128 experts (96 for 1A:3F)"): the default, and the
  /// split (attention ranks, ffn ranks) that uses another count.
  int default_experts = 0, split_experts = 0, split_a = 0, split_f = 0;
  ParseResult out;

  /// Line of the JSON path in the document: search each object key in turn.
  int line_of(const std::vector<std::string>& keys, const std::string& needle = "") const {
    size_t pos = 0;
    for (const auto& k : keys) {
      const auto p = text.find("\"" + k + "\"", pos);
      if (p == std::string::npos) break;
      pos = p;
    }
    if (!needle.empty()) {
      const auto p = text.find(needle, pos);
      if (p != std::string::npos) pos = p;
    }
    return pos ? line_at(text, pos) : 0;
  }

  static std::string join(const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() || k[0] == '[' ? "" : ".") + k;
    return s;
  }

  void with_default_sms(YAML::Node& p) const {
    if (!p["transport_sms"] && default_sms > 0) p["transport_sms"] = default_sms;
    if (!p["experts"] && default_experts > 0 && p["attention_ranks"] && p["ffn_ranks"]) {
      const bool split = split_experts > 0 && p["attention_ranks"].as<int>() == split_a && p["ffn_ranks"].as<int>() == split_f;
      p["experts"] = split ? split_experts : default_experts;
    }
  }

  void string_lines(const json& arr, const std::vector<std::string>& keys) {
    // Timeline traces: "## 1a3f T=1 afd", "anchor ... period median 20.10 us", " dev0 0:kernel start a end b dur c".
    const std::string first = arr[0].get<std::string>();
    const std::string table = join(keys);
    if (first.rfind("## ", 0) == 0 && first.rfind("###", 0) != 0) {
      YAML::Node ctx = afd_context_from_header(first, file, line_of(keys, first.substr(0, std::min<size_t>(first.size(), 40))));
      with_default_sms(ctx);
      static const hw::NamePattern period = hw::NamePattern::compile(R"(period median\s+([0-9.]+)\s*us)", "AFD period", false),
                                   dev = hw::NamePattern::compile(
                                       R"(^\s*dev(\d+)\s+\d+:(\S+)\s+start\s+(-?[0-9.]+)\s+end\s+(-?[0-9.]+)\s+dur\s+(-?[0-9.]+))",
                                       "AFD kernel line", false);
      for (size_t i = 1; i < arr.size(); ++i) {
        if (!arr[i].is_string()) continue;
        const std::string s = arr[i].get<std::string>();
        const int sline = line_of(keys, s.substr(0, std::min<size_t>(s.size(), 40)));
        if (s.size() > 4096)  // a timeline line is one kernel's: bounded before it is copied around
          throw FileError(file, sline, table, fmt::format("a timeline line of {} bytes is longer than the 4096 bytes allowed", s.size()));
        auto num = [&](const std::string& text, const char* what) { return hw::parse_double(text, {file, sline, table + " " + what}); };
        std::string m[5];
        Record r;
        r.kind = "afd";
        r.table = table;
        r.unit = "us";
        r.file = file;
        r.params = YAML::Clone(ctx);
        if (period.search(s, m, 1)) {
          r.model = "afd";
          r.quantity = "period_us";
          r.value = num(m[0], "period");
          r.id = keys.back();
        } else if (dev.search(s, m, 5)) {
          // One kernel's duration, predicted by the afd runner's phase "devN/kernel". Fitted at
          // T >= 128 only (issue 6 judges durations there; below, launch jitter dominates them).
          r.quantity = "kernel_dur_us";
          r.id = keys.back();
          r.phase = fmt::format("dev{}/{}", m[0], m[1]);
          if (ctx["tokens"] && ctx["tokens"].as<int>() >= afd::kKernelDurationMinTokens) r.model = "afd";
          r.weight = phase_weight;
          r.value = num(m[4], "dur");
          r.extra["device"] = hw::parse_int(m[0], {file, sline, table + " dev"}, 0, 1 << 20);
          r.extra["kernel"] = m[1];
          r.extra["start_us"] = num(m[2], "start");
          r.extra["end_us"] = num(m[3], "end");
        } else {
          continue;
        }
        r.source = fmt::format("{}[{}]", table, i);
        r.line = line_of(keys, s.substr(0, std::min<size_t>(s.size(), 40)));
        out.records.push_back(std::move(r));
      }
      return;
    }
    // Header + AFD JSON lines.
    YAML::Node ctx(YAML::NodeType::Map);
    std::string sub = table;
    for (size_t i = 0; i < arr.size(); ++i) {
      if (!arr[i].is_string()) continue;
      const std::string s = trim(arr[i].get<std::string>());
      const int line = line_of(keys, s.substr(0, std::min<size_t>(s.size(), 30)));
      if (s.empty()) continue;
      if (s[0] == '#') {
        ctx = afd_context_from_header(s, file, line);
        sub = table + ":" + trim(s.substr(s.find_first_not_of('#')));
        continue;
      }
      if (s[0] != '{') continue;
      const json obj = parse_json_at(s, file, line);
      if (!obj.is_object() || !obj.contains("tokens")) continue;
      YAML::Node c = YAML::Clone(ctx);
      with_default_sms(c);
      for (auto& r : records_from_afd_line(obj, c, sub, file, line)) {
        r.source = fmt::format("{}[{}]", table, i);
        out.records.push_back(std::move(r));
      }
    }
  }

  void screen(const json& obj, const std::vector<std::string>& keys) {
    // The benchmark's argv: --ffn-ranks F --attention-ranks A --num-sms S --hybrid on|off.
    YAML::Node base(YAML::NodeType::Map);
    const auto& argv = obj["passthrough"];
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (!argv[i].is_string() || !argv[i + 1].is_string()) continue;
      const std::string a = argv[i].get<std::string>(), v = argv[i + 1].get<std::string>();
      try {
        const hw::NumberAt at{file, line_of(keys), join(keys) + ".passthrough " + a};
        if (a == "--ffn-ranks") base["ffn_ranks"] = hw::parse_int(v, at, 0, 1 << 30);
        else if (a == "--attention-ranks") base["attention_ranks"] = hw::parse_int(v, at, 0, 1 << 30);
        else if (a == "--num-sms") base["transport_sms"] = hw::parse_int(v, at, 0, 1 << 30);
        else if (a == "--hybrid") base["hybrid"] = v;
        else if (a == "--hidden") base["hidden"] = hw::parse_int(v, at, 0, 1 << 30);
        else if (a == "--payload") base["payload"] = v;
      } catch (const FileError&) {
        throw FileError(file, line_of(keys), join(keys) + ".passthrough", fmt::format("'{} {}': expected a whole number from 0 to 2^30", a, v.substr(0, 40)));
      }
    }
    with_default_sms(base);
    const json arms = obj.contains("arms") && obj["arms"].is_object() ? obj["arms"] : json::object();
    const std::string table = join(keys);
    for (size_t i = 0; i < obj["table"].size(); ++i) {
      const auto& row = obj["table"][i];
      if (!row.is_object() || !row.contains("tokens") || !is_int_like(row["tokens"])) continue;
      for (auto it = row.begin(); it != row.end(); ++it) {
        if (it.key() == "tokens" || !it.value().is_object() || !it.value().contains("median_us")) continue;
        const std::string arm = it.key();
        const json def = arms.contains(arm) ? arms[arm] : json::object();
        const bool masked = arm.rfind("masked", 0) == 0 || (def.contains("role_aware") && def["role_aware"] == false);
        Record r = afd_median_record(file, table);
        r.params = YAML::Clone(base);
        r.params["path"] = masked ? "masked" : "afd";
        r.params["tokens"] = hw::to_int(row["tokens"].get<double>(), {file, line_of(keys, "\"table\""), fmt::format("{}.table[{}].tokens", table, i)}, 1, int64_t(1) << 40);
        if (!it.value()["median_us"].is_number())
          throw FileError(file, line_of(keys), fmt::format("{}.table[{}].{}.median_us", table, i, arm), "expected a number");
        r.value = it.value()["median_us"].get<double>();
        r.extra = it.value();
        r.extra["arm"] = arm;
        if (def.contains("_env")) r.extra["env"] = def["_env"];
        r.id = fmt::format("{}/{}/tokens={}", keys.back(), arm, row["tokens"].dump());
        r.source = fmt::format("{}.table[{}].{}", table, i, arm);
        r.line = line_of(keys, "\"table\"");
        out.records.push_back(std::move(r));
      }
    }
  }

  void sm_sweep(const json& obj, const std::string& split, const std::vector<std::string>& keys) {
    YAML::Node ctx = afd_context_from_header(split, file, line_of(keys));
    const std::string table = join(keys);
    for (auto t = obj.begin(); t != obj.end(); ++t) {
      if (!t.value().is_object()) continue;
      for (auto s = t.value().begin(); s != t.value().end(); ++s) {
        if (!s.value().is_number()) continue;
        Record r = afd_median_record(file, table);
        r.params = YAML::Clone(ctx);
        r.params["path"] = "afd";
        try {
          r.params["tokens"] = hw::parse_int(t.key(), {file, line_of(keys), table}, 1, 1 << 30);
          r.params["transport_sms"] = hw::parse_int(s.key(), {file, line_of(keys), table}, 0, 1 << 30);
        } catch (const FileError&) {
          throw FileError(file, line_of(keys), table, fmt::format("expected numeric tokens / SM keys, got '{}' / '{}'", t.key(), s.key()));
        }
        r.value = s.value().get<double>();
        r.id = fmt::format("{}/tokens={}/sms={}", split, t.key(), s.key());
        r.source = fmt::format("{}.{}.{}", table, t.key(), s.key());
        auto k2 = keys;
        k2.push_back(t.key());
        r.line = line_of(k2, "\"" + s.key() + "\"");
        out.records.push_back(std::move(r));
      }
    }
  }

  void walk(const json& node, std::vector<std::string> keys) {
    static const hw::NamePattern split_key = hw::NamePattern::compile(R"(\d+a\d+f)", "AFD split key", false);
    if (node.is_object()) {
      if (node.contains("passthrough") && node["passthrough"].is_array() && node.contains("table") && node["table"].is_array()) {
        screen(node, keys);
        return;
      }
      for (auto it = node.begin(); it != node.end(); ++it) {
        auto k = keys;
        k.push_back(it.key());
        if (split_key.full_match(it.key()) && it.value().is_object()) sm_sweep(it.value(), it.key(), k);
        else walk(it.value(), k);
      }
    } else if (node.is_array() && !node.empty()) {
      if (node[0].is_string()) {
        string_lines(node, keys);
        return;
      }
      for (size_t i = 0; i < node.size(); ++i) {
        auto k = keys;
        k.push_back(fmt::format("[{}]", i));
        walk(node[i], k);
      }
    }
  }
};

}  // namespace

ParseResult parse_afd_document(const std::string& text, const std::string& file, double phase_weight) {
  json doc;
  hw::check_json_limits(text, {file, 0, ""});  // nesting and size, before the parser sees it
  try {
    doc = hw::parse_json_unique_keys(text);
  } catch (const hw::DuplicateJsonKey& e) {
    throw FileError(file, 0, e.key, e.what());
  } catch (const json::exception& e) {
    // A syntax error (its byte offset -> line) or a number out of the range of a double ("1e400").
    throw FileError(file, hw::json_error_line(text, {file, 0, ""}, e), "", hw::json_error_text(e));
  }
  if (!doc.is_object()) throw FileError(file, 1, "", "expected a JSON object at the top level");
  AfdDoc d{text, file};
  d.phase_weight = phase_weight;
  if (doc.contains("setup") && doc["setup"].is_string()) {
    std::string m[3];
    auto pattern = [](const char* text) { return hw::NamePattern::compile(text, "AFD setup pattern", false); };
    static const hw::NamePattern sms = pattern(R"((\d+)\s+transport SMs)"), experts = pattern(R"(of\s+(\d+)\s+experts)"),
                                 split = pattern(R"(\((\d+)\s+for\s+(\d+)A:(\d+)F\))");
    const std::string setup = doc["setup"].get<std::string>();
    if (setup.size() > 4096)  // a one-line description: bounded before the patterns run
      throw FileError(file, line_at(text, text.find("\"setup\"")), "setup", fmt::format("{} bytes, more than the 4096 allowed", setup.size()));
    const hw::NumberAt at{file, int(line_at(text, text.find("\"setup\""))), "setup"};
    auto count = [&](const std::string& t) { return int(hw::parse_int(t, at, 0, 1 << 30)); };
    if (sms.search(setup, m, 1)) d.default_sms = count(m[0]);
    if (experts.search(setup, m, 1)) d.default_experts = count(m[0]);
    if (split.search(setup, m, 3)) {
      d.split_experts = count(m[0]);
      d.split_a = count(m[1]);
      d.split_f = count(m[2]);
    }
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) d.walk(it.value(), {it.key()});
  return std::move(d.out);
}

// ---------------------------------------------------------------------------------------------
// Scenario files and dispatch

void refuse_layer_fits(const models::Scenario& sc) {
  if (const models::ModelSpec* spec = models::find_spec(sc.model); spec && spec->check_fit_input) spec->check_fit_input(sc);
}

ParseResult parse_scenario_file(const std::string& path, double phase_weight) {
  ParseResult out;
  const auto sc = scenario::load(path);
  refuse_layer_fits(sc);
  for (const auto& c : sc.cases) {
    if (!c.measured) continue;
    Record base;
    base.kind = "scenario";
    base.model = sc.model;
    base.table = table_of_case(c.id);
    base.id = sc.name + ":" + c.id;
    base.params = c.params;
    base.unit = "us";
    base.file = path;
    base.line = c.line;
    base.source = c.measured->source;
    if (c.measured->value_us) {
      Record r = base;
      r.quantity = c.measured->metric == "period_us" ? "period_us" : "value_us";
      r.value = *c.measured->value_us;
      out.records.push_back(std::move(r));
    }
    // AFD timelines: each kernel's duration at T >= 128 (what `fusesim check` judges), as a phase.
    const models::ModelSpec* spec = models::find_spec(sc.model);
    for (const auto& k : spec && spec->fitted_kernels ? spec->fitted_kernels(c, false) : std::vector<models::Measured::KernelSpan>{}) {
      Record r = base;
      r.quantity = "kernel_dur_us";
      r.phase = k.name();
      r.value = k.duration_us;
      r.weight = phase_weight;
      out.records.push_back(std::move(r));
    }
    for (const auto& [ph, v] : c.measured->phases_us) {
      Record r = base;
      r.quantity = "phase_us";
      r.phase = ph;
      r.value = v;
      r.weight = phase_weight;
      out.records.push_back(std::move(r));
    }
  }
  return out;
}

namespace {
ParseResult parse_measurement_file_unchecked(const std::string& path, double phase_weight, const std::string& layout);

/// Every measured time the parsers produced (a record in us that is not rejected, and a timeline
/// kernel's start_us / end_us) in hw::kMinMeasuredUs .. hw::kMaxMeasuredUs, the bounds scenario
/// files' measured values have (one definition, hw/numbers.hpp): one check for every format, so no
/// 1e-300 or 1e300 reaches a fit. Errors: hw::FileError naming the file, line and quantity.
void check_measured_times(const ParseResult& res) {
  for (const auto& r : res.records) {
    if (r.rejected) continue;
    const std::string key = r.quantity.empty() ? r.id : r.quantity;
    if (r.unit == "us") hw::check_measured_us(r.value, {r.file, r.line, hw::printable(key)});
    for (const char* k : {"start_us", "end_us"})
      if (r.extra.contains(k) && r.extra[k].is_number()) hw::check_timeline_us(r.extra[k].get<double>(), {r.file, r.line, hw::printable(r.id) + "." + k});
  }
}
}  // namespace

ParseResult parse_measurement_file(const std::string& path, double phase_weight, const std::string& layout) {
  ParseResult res = parse_measurement_file_unchecked(path, phase_weight, layout);
  check_measured_times(res);
  return res;
}

namespace {
ParseResult parse_measurement_file_unchecked(const std::string& path, double phase_weight, const std::string& layout) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".yaml" || ext == ".yml") return parse_scenario_file(path, phase_weight);
  // Bounded (hw/io.hpp): /dev/zero, a FIFO, a directory or a file of hundreds of MB is refused
  // before it is read (it was read whole: 2 GB, then a bare std::bad_alloc).
  const std::string text = hw::read_input_file(path, "measurement file (JSON lines, a log with RESULT_JSON lines or a JSON document)",
                                               hw::kMaxMeasurementFileBytes, "--measurements");
  // A multi-line JSON document (seed-004 layout): the first non-blank line is a lone '{' or the
  // first object does not close on its line.
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const auto eol = text.find('\n', first);
    const std::string l1 = trim(text.substr(first, eol == std::string::npos ? std::string::npos : eol - first));
    // Both tries are bounded (hw/json_limits.hpp): no text over the limits reaches the parser.
    bool one_line_object = false;
    try {
      one_line_object = hw::parse_json_bounded(l1, {path, 1, ""}).is_object();
    } catch (const hw::FileError&) {
    }
    if (!one_line_object) {
      // Either a whole document or a malformed first line: a document must parse as a whole. One
      // nested too deep or too long is refused here, naming the limit.
      hw::check_json_limits(text, {path, 0, ""});
      bool whole = false;
      try {
        whole = hw::parse_json_bounded(text, {path, 0, ""}).is_object();
      } catch (const hw::FileError&) {
        // A first line that is a lone '{' opens a document (seed-004 layout): its error (a syntax
        // error, a number out of range) names the line in the document, not line 1 as a JSON line.
        if (l1 == "{") throw;
      }
      if (whole) return parse_afd_document(text, path, phase_weight);
    }
  }
  std::istringstream lines(text);
  if (ext == ".log" || ext == ".txt" || ext == ".out") {
    // A log: RESULT_JSON lines among noise, unless it is really JSON lines.
    if (first == std::string::npos || text[first] != '{') return parse_result_json_stream(lines, path, layout);
  }
  return parse_jsonl_stream(lines, path, layout);
}
}  // namespace

std::vector<FitPoint> to_fit_points(const std::vector<Record>& records, const std::vector<std::string>& models) {
  std::vector<FitPoint> out;
  std::set<std::string> ids;
  for (const auto& r : records) {
    if (r.rejected || r.model.empty() || !(r.value > 0)) continue;
    if (!models.empty() && std::find(models.begin(), models.end(), r.model) == models.end()) continue;
    if (!models::find_spec(r.model)) continue;
    std::string id = r.id + (r.phase.empty() ? "" : "#" + r.phase);
    if (!ids.insert(id).second) {
      id = fmt::format("{}@{}:{}", id, base_of(r.file), r.line);
      for (int n = 2; !ids.insert(id).second; ++n) id = fmt::format("{}@{}:{}#{}", r.id, base_of(r.file), r.line, n);
    }
    const std::string src = r.source.empty() ? fmt::format("{}:{}", r.file, r.line) : r.source;
    out.push_back(FitPoint{id, r.model, r.table, r.params, r.phase, r.value, r.weight, src,
                           r.phase.empty() && r.quantity == "period_us" ? "period_us" : "", r.file, r.line});
  }
  return out;
}

namespace {
/// Every key of `sub` is in `super` with the same scalar text.
bool params_subset(const YAML::Node& sub, const YAML::Node& super) {
  if (!sub || !sub.IsMap()) return true;
  for (auto it = sub.begin(); it != sub.end(); ++it) {
    const auto v = super[it->first.as<std::string>()];
    if (!v) return false;
    YAML::Emitter a, b;
    a << YAML::Flow << it->second;
    b << YAML::Flow << v;
    if (std::string(a.c_str()) != b.c_str()) return false;
  }
  return true;
}
}  // namespace

std::vector<FitPoint> load_fit_points(const std::vector<std::string>& paths, double phase_weight, std::vector<Record>* rejected,
                                      std::vector<std::string>* warnings, const std::string& layout) {
  std::vector<Record> file_recs, scen_recs;
  for (const auto& p : paths) {
    auto pr = parse_measurement_file(p, phase_weight, layout);
    if (warnings)
      for (auto& w : pr.warnings) warnings->push_back(w);
    for (auto& r : pr.records) {
      if (r.rejected) {
        if (rejected) rejected->push_back(r);
        continue;
      }
      (r.kind == "scenario" ? scen_recs : file_recs).push_back(std::move(r));
    }
  }
  // De-duplicate: a scenario total repeated by a measurement-file record is dropped; its phases
  // join that record (same id, so folds keep them together).
  std::map<std::string, size_t> replaced_by;  // scenario case id -> index in file_recs
  for (const auto& s : scen_recs) {
    if (!s.phase.empty()) continue;
    for (size_t i = 0; i < file_recs.size(); ++i) {
      const auto& f = file_recs[i];
      if (f.model != s.model || !f.phase.empty()) continue;
      const bool same_source = !s.source.empty() && f.source == s.source;
      const bool same_point = std::fabs(f.value - s.value) <= 1e-9 * std::fabs(s.value) && params_subset(s.params, f.params);
      if (same_source || same_point) {
        replaced_by.emplace(s.id, i);
        break;
      }
    }
  }
  std::vector<Record> ordered;
  std::vector<std::vector<Record>> joined(file_recs.size());
  std::vector<Record> rest;
  for (const auto& s : scen_recs) {
    auto it = replaced_by.find(s.id);
    if (it == replaced_by.end()) {
      rest.push_back(s);
      continue;
    }
    if (s.phase.empty()) continue;  // the total: replaced
    Record ph = s;
    ph.id = file_recs[it->second].id;
    ph.table = file_recs[it->second].table;
    ph.params = file_recs[it->second].params;
    joined[it->second].push_back(std::move(ph));
  }
  for (size_t i = 0; i < file_recs.size(); ++i) {
    ordered.push_back(file_recs[i]);
    for (auto& p : joined[i]) ordered.push_back(std::move(p));
  }
  for (auto& r : rest) ordered.push_back(std::move(r));
  return to_fit_points(ordered);
}

}  // namespace fusesim::calibrate
