#include "hw/io.hpp"
#include "hw/temp_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <vector>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <fmt/ranges.h>

#include "hw/hardware.hpp"
#include "hw/printable.hpp"

namespace fusesim::hw {

namespace {
/// Reject a mapping that repeats a key anywhere in the document (yaml-cpp keeps both silently).
void check_duplicate_keys(const YAML::Node& n, const std::string& path, const std::string& where, const ElementName& name) {
  if (n.IsMap()) {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
      const std::string here = where.empty() ? k : where + "." + k;
      if (!seen.insert(k).second)
        throw FileError(path, it->first.Mark().line + 1, here, "key given twice in the same mapping");
      check_duplicate_keys(it->second, path, here, name);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i)
      check_duplicate_keys(n[i], path, name ? name(where, n[i], i) : where + "[" + std::to_string(i) + "]", name);
  }
}
/// yaml-cpp events of the first document; an alias (`*name`) is refused. yaml-cpp shares an aliased
/// node rather than copying it, but every walk over the tree (the duplicate-key check, the scenario
/// loader, yaml_text) visits it once per reference: twelve levels of ten aliases each in a 1 KB file
/// are 10^12 visits (found by a user trial, 2026-12-02: hours of CPU at 15 MB). No file fusesim reads
/// needs anchors, so they are refused with the line, before the tree is built.
class AliasRefuser : public YAML::EventHandler {
 public:
  explicit AliasRefuser(const std::string& path) : path_(path) {}
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw FileError(path_, mark.line + 1, "",
                    "a YAML alias (*name): anchors and aliases are refused (nested aliases make a small file expand "
                    "exponentially when read); write the values out");
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  const std::string& path_;
};
}  // namespace

namespace {
std::string input_name(const std::string& what, const std::string& option) {
  return option.empty() ? fmt::format("a {}", what) : fmt::format("a {} ({})", what, option);
}
}  // namespace

std::uintmax_t check_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes,
                                const std::string& option) {
  const std::string expected = input_name(what, option);
  if (path.empty()) throw FileError("''", 0, "", fmt::format("an empty file name, expected {}", expected));
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw FileError(path, 0, "", fmt::format("does not exist, expected {}", expected));
    if (err == ELOOP) throw FileError(path, 0, "", fmt::format("a loop of symbolic links, expected {}", expected));
    throw FileError(path, 0, "", fmt::format("cannot read {}: {}", expected, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) throw FileError(path, 0, "", fmt::format("is a directory, expected {}", expected));
  if (!S_ISREG(st.st_mode))
    throw FileError(path, 0, "", fmt::format("is not a regular file (a device, FIFO or socket), expected {}", expected));
  const auto bytes = static_cast<std::uintmax_t>(st.st_size);
  if (bytes > max_bytes)
    throw FileError(path, 0, "",
                    fmt::format("is {} bytes, more than the {} MiB {} may hold: refused, not read", bytes, max_bytes >> 20,
                                expected));
  return bytes;
}

std::string read_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes,
                            const std::string& option) {
  check_input_file(path, what, max_bytes, option);
  const std::string expected = input_name(what, option);
  // O_NONBLOCK: a FIFO put in the file's place after the check must not block the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw FileError(path, 0, "", fmt::format("cannot open {}: {}", expected, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw FileError(path, 0, "", fmt::format("is not a regular file (a device, FIFO or socket), expected {}", expected));
  std::string text;
  text.reserve(static_cast<size_t>(std::min<std::uintmax_t>(static_cast<std::uintmax_t>(st.st_size), max_bytes)));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(path, 0, "", fmt::format("cannot read {}: {}", expected, std::strerror(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes)
      throw FileError(path, 0, "",
                      fmt::format("grew past the {} MiB {} may hold while read: refused, not read", max_bytes >> 20, expected));
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

YAML::Node load_yaml_map(const std::string& path, const std::string& what, const ElementName& element_name) {
  // Bounded before reading (read_input_file): /dev/zero, a FIFO or a file of hundreds of MB would
  // be read (or waited on) whole by yaml-cpp. The largest file fusesim ships is well under 1 MiB.
  const std::string whole = read_input_file(path, what, kMaxYamlFileBytes);
  std::istringstream in(whole);
  // Flow nesting ([ and {) bounded before yaml-cpp's recursive parser sees it: thousands of levels
  // overflowed its stack. Quoted text and comments are skipped; the parser checks everything else.
  {
    constexpr int kMaxFlowDepth = 64;
    std::string text;
    int depth = 0, n = 0;
    while (std::getline(in, text)) {
      ++n;
      char quote = 0;
      for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
          if (quote == '"' && c == '\\') ++i;
          else if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          if (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '[' || text[i - 1] == '{' || text[i - 1] == ',' ||
              text[i - 1] == ':')
            quote = c;
        } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
          break;
        } else if (c == '[' || c == '{') {
          if (++depth > kMaxFlowDepth)
            throw FileError(path, n, "", fmt::format("YAML nested more than {} levels deep in [ ] or {{ }}: refused, not parsed", kMaxFlowDepth));
        } else if ((c == ']' || c == '}') && depth > 0) {
          --depth;
        }
      }
    }
    in.clear();
    in.seekg(0);
  }
  YAML::Node root;
  try {
    {
      AliasRefuser refuse(path);
      YAML::Parser events(in);
      events.HandleNextDocument(refuse);
    }
    in.clear();
    in.seekg(0);
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    std::string hint;
    // yaml-cpp reports an unclosed flow collection where it gave up (often the next entry's line);
    // name the line of the bracket left open, found by a scan that skips quoted text and comments.
    if (e.msg.find("flow not found") != std::string::npos) {
      std::istringstream again(whole);
      std::vector<std::pair<char, int>> open;
      std::string text;
      for (int n = 1; std::getline(again, text) && n <= e.mark.line + 1; ++n) {
        char quote = 0;
        for (char ch : text) {
          if (quote) { if (ch == quote) quote = 0; continue; }
          if (ch == '"' || ch == '\'') quote = ch;
          else if (ch == '#') break;
          else if (ch == '{' || ch == '[') open.emplace_back(ch, n);
          else if ((ch == '}' || ch == ']') && !open.empty()) open.pop_back();
        }
      }
      if (!open.empty()) hint = fmt::format(" (the '{}' opened on line {} is not closed)", open.back().first, open.back().second);
    }
    throw FileError(path, e.mark.line + 1, "", "YAML syntax error: " + e.msg + hint);
  }
  if (!root.IsMap()) throw FileError(path, 1, "", "expected a mapping at the top level of the " + what);
  check_duplicate_keys(root, path, "", element_name);
  return root;
}

bool same_existing_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(a, ec) || !fs::exists(b, ec)) return false;
  const bool eq = fs::equivalent(a, b, ec);
  if (!ec) return eq;
  std::error_code e1, e2;
  return fs::weakly_canonical(a, e1) == fs::weakly_canonical(b, e2) && !e1 && !e2;
}


std::string yaml_text(const YAML::Node& n) {
  if (!n || n.IsNull()) return "null";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

YAML::Node yaml_merged(const YAML::Node& defaults, const YAML::Node& params) {
  YAML::Node out(YAML::NodeType::Map);
  for (const YAML::Node& m : {defaults, params})
    if (m && m.IsMap())
      for (auto it = m.begin(); it != m.end(); ++it) out[it->first.as<std::string>()] = it->second;
  return out;
}

int yaml_line(const YAML::Node& n) { return n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

void check_keys(const YAML::Node& map, const std::set<std::string>& allowed, const std::string& file, const std::string& where) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw FileError(file, yaml_line(it->first), where.empty() ? k : where + "." + k, "unknown key (expected one of: " + list + ")");
    }
  }
}

double yaml_number(const YAML::Node& n, const std::string& file, const std::string& key) {
  double v;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    // A numeric literal yaml-cpp cannot hold (1e999) is out of range, not a word.
    const std::string t = n.IsScalar() ? n.Scalar() : "";
    char* end = nullptr;
    const double d = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
    if (!t.empty() && end && *end == '\0' && std::isinf(d))
      throw FileError(file, yaml_line(n), key, fmt::format("'{}' is out of the range of a double", t));
    throw FileError(file, yaml_line(n), key, fmt::format("expected a number, got '{}'", yaml_text(n)));
  }
  if (!std::isfinite(v)) throw FileError(file, yaml_line(n), key, fmt::format("expected a finite number, got '{}'", yaml_text(n)));
  return v;
}

std::string yaml_reason(const YAML::Node& n, const std::string& file, const std::string& key) {
  bool flag = false;
  if (n.IsScalar() && n.Tag() != "!") {  // "!": quoted, so meant as text
    bool b;
    double d;
    flag = YAML::convert<bool>::decode(n, b) || YAML::convert<double>::decode(n, d);
  }
  if (!n.IsScalar() || flag || n.Scalar().find_first_not_of(" \t") == std::string::npos)
    throw FileError(file, yaml_line(n), key,
                    fmt::format("expected the reason the model misses this point (a non-empty text), got '{}'", yaml_text(n)));
  return n.Scalar();
}

std::string yaml_field(const YAML::Node& n, const std::string& file, const std::string& key, const std::string& expected,
                 bool may_be_empty, int null_line) {
  if (!n || n.IsNull()) {
    if (may_be_empty) return "";
    throw FileError(file, null_line ? null_line : yaml_line(n), key, "is empty (expected " + expected + ")");
  }
  if (!n.IsScalar())
    throw FileError(file, yaml_line(n), key,
                    fmt::format("expected {}, got a {} '{}'", expected, n.IsSequence() ? "list" : "mapping", yaml_text(n)));
  if (!may_be_empty && n.Scalar().find_first_not_of(" \t") == std::string::npos)
    throw FileError(file, yaml_line(n), key, "is empty (expected " + expected + ")");
  return n.Scalar();
}


namespace {
namespace fs = std::filesystem;

/// How messages name an output: "--out 'F'" (or "'F'" when no option named it).
std::string output_name(const OutputFile& f) {
  return f.option.empty() ? fmt::format("'{}'", printable(f.path)) : fmt::format("{} '{}'", f.option, printable(f.path));
}

/// The file a path names, for comparing destinations: absolute, symbolic links of the part that
/// exists resolved, '.' and '..' removed, so `F`, `./F`, `dir/../F` give the same path.
fs::path resolved(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  if (ec) a = fs::path(p);
  const fs::path c = fs::weakly_canonical(a, ec);
  return ec ? a.lexically_normal() : c;
}

/// Where an output is written: its path, or, for a symbolic link, the file the link points to
/// (writing through the link, as an editor does, rather than replacing the link).
fs::path destination(const std::string& p) {
  std::error_code ec;
  return fs::is_symlink(p, ec) ? resolved(p) : fs::path(p);
}

/// Registry slots (hw/temp_files.hpp) of the temporaries make_temp created and not yet untracked.
std::map<std::string, int>& temp_slots() {
  static std::map<std::string, int> m;
  return m;
}

/// A new hidden file with a unique name `.NAME.XXXXXX` in base's folder (NAME: base's file name),
/// registered for removal on SIGINT/SIGTERM until untrack_temp(); returns its descriptor (-1 on
/// failure).
int make_temp(const fs::path& base, std::string& name) {
  std::string hidden(1, '.');  // (not "." + name: GCC 12's -Wrestrict false positive)
  hidden.append(base.filename().string()).append(".XXXXXX");
  std::string pattern = (base.parent_path() / hidden).string();
  int slot = -1;
  const int fd = create_registered_temp(pattern, slot);  // no signal between creating and registering
  name = fd >= 0 ? pattern : std::string();
  if (fd >= 0) temp_slots()[name] = slot;
  return fd;
}

/// The temporary `name` was renamed or unlinked: no longer removed on a signal.
void untrack_temp(const std::string& name) {
  auto it = temp_slots().find(name);
  if (it == temp_slots().end()) return;
  forget_temp(it->second);
  temp_slots().erase(it);
}

}  // namespace

void check_output_files(const std::vector<OutputFile>& files) {
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = i + 1; j < files.size(); ++j) {
      std::error_code ec;
      if (files[i].path == files[j].path || resolved(files[i].path) == resolved(files[j].path) ||
          fs::equivalent(files[i].path, files[j].path, ec)) {
        const std::string what = files[i].path == files[j].path ? fmt::format("'{}'", printable(files[i].path))
                                                                  : fmt::format("'{}' and '{}'", printable(files[i].path), printable(files[j].path));
        throw std::invalid_argument(
            files[i].option.empty() || files[j].option.empty()
                ? fmt::format("two outputs name the same file {}: give each output its own file", what)
                : fmt::format("{} and {} name the same file {}: give each its own file", files[i].option, files[j].option, what));
      }
    }
  for (const auto& f : files) {
    if (f.path.empty()) throw std::runtime_error(fmt::format("{}: expected a file name, got an empty one", output_name(f)));
    const fs::path dest = f.replace_link ? fs::path(f.path) : destination(f.path);
    std::error_code ec;
    const auto st = f.replace_link ? fs::symlink_status(dest, ec) : fs::status(dest, ec);
    if (fs::is_directory(st))
      throw std::runtime_error(fmt::format("cannot write {}: is a directory, expected a file name", output_name(f)));
    if (fs::exists(st) && !fs::is_regular_file(st) && !(f.replace_link && fs::is_symlink(st)))
      throw std::runtime_error(fmt::format("cannot write {}: not a regular file (a device, pipe or socket), expected a file name", output_name(f)));
    const fs::path parent = dest.parent_path().empty() ? fs::path(".") : dest.parent_path();
    const auto pst = fs::status(parent, ec);
    if (!fs::exists(pst))
      throw std::runtime_error(fmt::format("cannot write {}: folder '{}' does not exist", output_name(f), printable(parent.string())));
    if (!fs::is_directory(pst))
      throw std::runtime_error(fmt::format("cannot write {}: '{}' is not a folder", output_name(f), printable(parent.string())));
    if (::access(parent.c_str(), W_OK | X_OK) != 0)
      throw std::runtime_error(fmt::format("cannot write {}: folder '{}' is not writable: {}", output_name(f), printable(parent.string()), std::strerror(errno)));
  }
}

void write_file_atomic(const std::string& path, const std::string& text) { write_outputs_atomic({{path, text, ""}}); }

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<OutputFile> out;
  for (const auto& [path, text] : files) out.push_back({path, text, ""});
  write_outputs_atomic(out);
}

// The temporaries are hidden (.F.XXXXXX) and registered with hw/temp_files.hpp, so a SIGINT,
// SIGTERM or SIGHUP while writing removes them (io.hpp's F.XXXXXX is now .F.XXXXXX).
void write_outputs_atomic(const std::vector<OutputFile>& files) {
  check_output_files(files);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  std::vector<fs::path> dests;
  std::vector<std::string> tmps;
  auto drop = [&](const std::vector<std::string>& names) {
    for (const auto& t : names)
      if (!t.empty()) { ::unlink(t.c_str()); untrack_temp(t); }
  };
  // 1. Every text into its own temporary file beside its destination.
  for (const auto& f : files) {
    dests.push_back(f.replace_link ? fs::path(f.path) : destination(f.path));
    std::string tmp;
    const int fd = make_temp(dests.back(), tmp);
    bool ok = fd >= 0;
    int err = errno;
    if (ok) {
      tmps.push_back(tmp);
      struct stat st {};
      const mode_t mode = !f.replace_link && ::stat(dests.back().c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~mask);
      for (size_t done = 0; ok && done < f.text.size();) {
        const ssize_t n = ::write(fd, f.text.data() + done, f.text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { ok = false; err = errno; }
        else done += size_t(n);
      }
      if (ok && ::fchmod(fd, mode) != 0) { ok = false; err = errno; }
      if (::close(fd) != 0 && ok) { ok = false; err = errno; }
    }
    if (!ok) {
      drop(tmps);
      throw std::runtime_error(fmt::format("cannot write {}: {}", output_name(f), std::strerror(err)));
    }
  }
  // 2. Keep a hard link to each file about to be replaced, so a failed rename can put it back.
  std::vector<std::string> backups(files.size());
  std::vector<bool> existed(files.size(), false);
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    existed[i] = files[i].replace_link ? fs::exists(fs::symlink_status(dests[i], ec)) : fs::exists(dests[i], ec);
    if (!existed[i]) continue;
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::string name;
      const int fd = make_temp(dests[i], name);
      if (fd < 0) break;
      ::close(fd);
      ::unlink(name.c_str());
      if (::link(dests[i].c_str(), name.c_str()) == 0) { backups[i] = name; break; }
      untrack_temp(name);
      if (errno != EEXIST) break;
    }
  }
  // 3. Rename into place; on a failure, undo the renames already done.
  for (size_t i = 0; i < files.size(); ++i) {
    if (::rename(tmps[i].c_str(), dests[i].c_str()) == 0) { untrack_temp(tmps[i]); continue; }
    const std::string why = std::strerror(errno);
    std::vector<std::string> kept;  // replaced files that could not be put back
    for (size_t j = 0; j < i; ++j) {
      if (!backups[j].empty() && ::rename(backups[j].c_str(), dests[j].c_str()) == 0) { untrack_temp(backups[j]); continue; }
      if (!existed[j]) ::unlink(dests[j].c_str());
      else kept.push_back(printable(files[j].path));
    }
    drop(std::vector<std::string>(tmps.begin() + long(i), tmps.end()));
    drop(std::vector<std::string>(backups.begin() + long(i), backups.end()));
    throw std::runtime_error(fmt::format("cannot move output into {}: {} ({})", output_name(files[i]), why,
                                         kept.empty() ? "no output was written"
                                                      : fmt::format("'{}' could not be put back", fmt::join(kept, "', '"))));
  }
  drop(backups);
}

}  // namespace fusesim::hw
