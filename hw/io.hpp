// File helpers shared by the loaders and the command line.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace fusesim::hw {

/// How an error names element i of the sequence at key path `where` (default: "where[i]"); a
/// scenario names a case by its id ("cases[ID]").
using ElementName = std::function<std::string(const std::string& where, const YAML::Node& element, size_t i)>;

/// Read a YAML file whose top level must be a mapping. `what` names the file's role in errors
/// ("hardware file", "scenario file"). Errors: FileError (hw/hardware.hpp) naming the file and
/// line for an unreadable file, a syntax error, a top level that is not a mapping, or a key given
/// twice in one mapping anywhere in the document (its key path built with `element_name`).
YAML::Node load_yaml_map(const std::string& path, const std::string& what, const ElementName& element_name = {});

/// A YAML value as written, for messages and ids: a scalar's text, "null" for a missing or null
/// value, the flow form ("[1, 2]", "{a: 1}") of a sequence or mapping.
std::string yaml_text(const YAML::Node& n);

/// True when paths `a` and `b` name one existing file (`F`, `./F`, `dir/../F`, a link to F: by
/// std::filesystem::equivalent); false when either does not exist. Used to refuse an output that
/// would overwrite one of the command's inputs. Throws nothing.
bool same_existing_file(const std::string& a, const std::string& b);

/// A new mapping of `defaults` overlaid by `params` (either may be missing): a scenario case's
/// parameters after its file's `defaults:`.
YAML::Node yaml_merged(const YAML::Node& defaults, const YAML::Node& params);

/// 1-based line of a node in its file (0 when unknown).
int yaml_line(const YAML::Node& n);

/// Refuse a key of `map` not in `allowed`: FileError naming file, line and the key as "where.key",
/// with the accepted keys ("unknown key (expected one of: a, b, ...)").
void check_keys(const YAML::Node& map, const std::set<std::string>& allowed, const std::string& file, const std::string& where);

/// A finite number. Errors: FileError naming file, line and `key` for a word, a literal out of the
/// range of a double ("'1e999' is out of the range of a double") or a non-finite value.
double yaml_number(const YAML::Node& n, const std::string& file, const std::string& key);

/// The reason of a known miss: a non-empty text (a plain true/false/number is a flag, not a reason).
/// Errors: FileError naming file, line and key.
std::string yaml_reason(const YAML::Node& n, const std::string& file, const std::string& key);

/// A text field (a name, a path, a source): a scalar, not a list or mapping, and not empty unless
/// `may_be_empty`; `expected` says what it should be in messages. `null_line`: the line to name for
/// an empty value (yaml-cpp marks a null value where the next token starts). Errors: FileError.
std::string yaml_field(const YAML::Node& n, const std::string& file, const std::string& key, const std::string& expected,
                       bool may_be_empty = false, int null_line = 0);

/// Size limits for the files fusesim reads (bytes). Each is far above what a real file of the kind
/// holds and far below what would exhaust memory; a file over its limit is refused before it is read.
/// A scenario or hardware file (YAML): the largest shipped is under 1 MiB; generated sweeps stay small.
inline constexpr std::uintmax_t kMaxYamlFileBytes = std::uintmax_t(64) << 20;
/// A hardware file's measured table (JSON lines): the largest shipped is under 1 MiB; 64 MiB holds
/// 60000 rows of ~1 KiB, and is the JSON document limit (hw/json_limits.hpp) a one-line file meets anyway.
inline constexpr std::uintmax_t kMaxTableFileBytes = std::uintmax_t(64) << 20;
/// A measurement file for calibrate fit (JSON lines, a log with RESULT_JSON lines, an AFD document):
/// the largest recorded (calibrate/data) are a few MiB; read whole into memory, with every record
/// kept, so 64 MiB (tens of thousands of records) bounds memory at a few hundred MiB.
inline constexpr std::uintmax_t kMaxMeasurementFileBytes = std::uintmax_t(64) << 20;
/// A trace's category/rules YAML (--rules, --categories): a list of patterns, a few KiB.
inline constexpr std::uintmax_t kMaxRulesFileBytes = std::uintmax_t(4) << 20;
/// A check --baseline (a --save-predictions JSON): about 1 KiB per prediction.
inline constexpr std::uintmax_t kMaxBaselineFileBytes = std::uintmax_t(64) << 20;
/// A sweep's --out read back by --resume: streamed line by line (each line bounded by the sweep), so
/// this bounds the time spent, not memory: 10^7 cases of ~1 KiB rows.
inline constexpr std::uintmax_t kMaxResumeFileBytes = std::uintmax_t(16) << 30;
/// A Kineto trace as stored (gzip or plain): streamed, so this bounds the work, not memory; the
/// largest real traces seen are a few hundred MB uncompressed.
inline constexpr std::uintmax_t kMaxTraceFileBytes = std::uintmax_t(4) << 30;

/**
 * Check, without opening it, that `path` is an existing regular file of at most `max_bytes` bytes
 * (by stat, following symbolic links, so a FIFO is refused before an open() that would wait on it).
 * `what` names the file's role ("measurement file"); `option` (may be empty) the option that named
 * it ("--measurements"). Errors: FileError naming the path, the option, what was expected and the
 * limit, for a missing file, a directory, a device/FIFO/socket, a symbolic-link loop or a file over
 * the limit. Returns the size in bytes.
 */
std::uintmax_t check_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes,
                                const std::string& option = "");

/**
 * The whole text of an input file, bounded: check_input_file, then an open that cannot block
 * (O_NONBLOCK, re-checked by fstat, so a file swapped for a FIFO after the check is refused too)
 * and a read of at most `max_bytes` (a file that grows past it while read is refused). The one way
 * fusesim reads an input file whole (tables, measurements, rules, baselines). Errors: FileError as
 * check_input_file, and for a file that cannot be opened or read (naming the system's reason).
 */
std::string read_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes,
                            const std::string& option = "");

/// One output of a command: where it goes, what it holds, and the option that named it ("--out";
/// may be empty), which error messages quote. `replace_link`: a symbolic link at `path` is replaced
/// by the new file rather than followed, and the file is written 0666 less the umask (plot side
/// files in a --plot folder: a link planted there must not make fusesim write outside the folder);
/// otherwise a link's target is written and an existing file keeps its permissions.
struct OutputFile {
  std::string path, text, option;
  bool replace_link = false;
};

/// Check, without writing anything, that every output can be written: each path names a file (not
/// a directory) in an existing, writable folder, and no two outputs are the same file (`F`, `./F`,
/// `dir/../F` and a symbolic link to F are one file). Commands call it before long work so a bad
/// destination is refused at once. Errors: std::invalid_argument when two outputs name the same
/// file; std::runtime_error naming the option, the path and what was expected.
void check_output_files(const std::vector<OutputFile>& files);

/// Write `text` to `path` through a temporary file renamed into place, so a failure leaves
/// neither a half-written file nor the temporary. Errors: as write_files_atomic.
void write_file_atomic(const std::string& path, const std::string& text);

/// Write several outputs all-or-nothing. Every destination is checked first (check_output_files);
/// every text then goes to its own uniquely named temporary file beside its destination (F.XXXXXX,
/// never a fixed name that could be a user's file); only when all are written are they renamed into
/// place. A rename that still fails puts back what the earlier renames replaced, so a failure leaves
/// every existing file as it was and no temporary behind. A replaced file keeps its permissions; a
/// new one gets the usual ones (0666 less the umask).
/// Errors: std::invalid_argument when two outputs name the same file; std::runtime_error naming
/// the option, the path and the reason.
void write_outputs_atomic(const std::vector<OutputFile>& files);
/// write_outputs_atomic of (path, text) pairs named by no option.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace fusesim::hw
