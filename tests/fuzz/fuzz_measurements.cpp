// libFuzzer target: the measurement parsers of calibrate/measurements.cpp: RESULT_JSON logs, JSON
// lines (AFD headers and lines, probe records) and seed-004 AFD documents. The first byte picks
// the parser, the rest is the file.
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>

#include "calibrate/measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        std::istringstream in(text);
        fusesim::calibrate::parse_result_json_stream(in, "fuzz.log");
        break;
      }
      case 1: {
        std::istringstream in(text);
        fusesim::calibrate::parse_jsonl_stream(in, "fuzz.jsonl");
        break;
      }
      default:
        fusesim::calibrate::parse_afd_document(text, "fuzz.json");
    }
  } catch (const std::exception&) {
  }
  return 0;
}
