// File helpers shared by the loaders and the command line.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace fusesim::hw {

/// Read a YAML file whose top level must be a mapping. `what` names the file's role in errors
/// ("hardware file", "scenario file"). Errors: FileError (hw/hardware.hpp) naming the file and
/// line for an unreadable file, a syntax error, a top level that is not a mapping, or a key given
/// twice in one mapping anywhere in the document.
YAML::Node load_yaml_map(const std::string& path, const std::string& what);

/// A YAML value as written, for messages and ids: a scalar's text, "null" for a missing or null
/// value, the flow form ("[1, 2]", "{a: 1}") of a sequence or mapping.
std::string yaml_text(const YAML::Node& n);

/// A new mapping of `defaults` overlaid by `params` (either may be missing): a scenario case's
/// parameters after its file's `defaults:`.
YAML::Node yaml_merged(const YAML::Node& defaults, const YAML::Node& params);

/// The first word between single quotes in `message` for which `is_key` holds ("" if none): how
/// an error names the parameter it is about, so a loader can point at that key's line.
std::string first_quoted_key(const std::string& message, const std::function<bool(const std::string&)>& is_key);

/// Write `text` to `path` through a temporary file renamed into place, so a failure leaves
/// neither a half-written file nor the temporary. Errors: std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& text);

/// Write several outputs all-or-nothing: every text goes to its temporary file first; only when all
/// are written are they renamed into place, so a failure leaves every existing file untouched.
/// Errors: std::invalid_argument when two outputs name the same file; std::runtime_error naming
/// the path and the system's reason.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace fusesim::hw
