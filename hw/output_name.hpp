// Output names given on the command line (trial 3): CLI11 takes the word after an option as its
// value even when it begins with '-', so `run --out -` wrote a file named '-' (not stdout), `--out
// -h` a file '-h', and `check --plot --` a folder '--'. Header-only: for a CLI11 check().
#pragma once

#include <string>

#include "hw/printable.hpp"

namespace fusesim::hw {

/// CLI11 check of an output option (a file or folder fusesim writes): "" when `name` may be used,
/// else the reason (CLI11 puts the option's name in front). A name beginning with '-' is refused;
/// `./-name` names such a file.
inline std::string refuse_dash_output_name(const std::string& name) {
  if (name.empty() || name[0] != '-') return {};
  const std::string n = printable(name);
  return "'" + n + "' begins with '-', which an output name may not (was an option given where a name belongs?" +
         (name == "-" ? " '-' does not mean stdout here" : "") + "); write ./" + n + " for a file or folder of that name";
}

}  // namespace fusesim::hw
