// Regular expressions run on untrusted text (trace event names, user rule files, benchmark log
// headers) in time linear in the text, with no recursion over it (issue 22).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace fusesim::hw {

/**
 * A compiled pattern matched by RE2 (Debian's libre2; github.com/google/re2): a DFA/NFA matcher
 * whose time is linear in the input and whose stack does not grow with it, so a 2 MB kernel name
 * or a pattern like `(a*)*b` cannot hang or overflow it (libstdc++'s std::regex backtracks
 * recursively: `(a*)*b` on 30 'a's did not finish in 10 minutes, a 40 KB name overflowed the stack).
 *
 * Syntax: RE2's (github.com/google/re2/wiki/Syntax), which is ECMAScript's without backreferences
 * and lookaround (`(?!...)`, `(?=...)`, `\1`): a pattern using them is refused. Text is matched as
 * bytes (Latin-1 mode: every byte one character, so invalid UTF-8 in a name is harmless).
 * Compiled size is bounded by RE2's memory budget (kMaxProgramBytes); a larger pattern is refused.
 * A default-constructed NamePattern matches nothing. Copies share the compiled automaton.
 */
class NamePattern {
 public:
  /// RE2's memory budget for one compiled pattern and its DFA caches, bytes.
  static constexpr int64_t kMaxProgramBytes = int64_t(32) << 20;

  NamePattern() = default;
  /// Compile `text` within `max_program_bytes` of RE2 memory. `what` names the pattern's origin in
  /// errors (e.g. "--step-regex", "rules.yaml:12: pattern"). Errors: std::invalid_argument "WHAT:
  /// invalid regex 'TEXT': REASON" (RE2's reason: a syntax error, an unsupported lookaround or
  /// backreference, too large for the budget).
  static NamePattern compile(const std::string& text, const std::string& what, bool case_insensitive = true,
                             int64_t max_program_bytes = kMaxProgramBytes);

  /// The compiled program's size (RE2's instruction count; 0 for an empty pattern): what a caller
  /// compiling many patterns (a rules file) bounds in total.
  int program_size() const;

  /// True when the pattern matches anywhere in `s` (std::regex_search's meaning).
  bool search(std::string_view s) const;
  /// True when the pattern matches the whole of `s` (std::regex_match's meaning).
  bool full_match(std::string_view s) const;
  /// search() that also returns the first `n` capture groups' texts (empty for a group that did not
  /// take part); false when there is no match or the pattern has fewer than `n` groups.
  bool search(std::string_view s, std::string* groups, int n) const;
  /// How many non-overlapping matches `s` holds, left to right (an empty match advances one byte);
  /// at most `limit` are counted. Linear in `s` per match (RE2).
  size_t count(std::string_view s, size_t limit = 1000) const;

  const std::string& text() const { return text_; }
  bool empty() const { return re_ == nullptr; }

 private:
  std::shared_ptr<const re2::RE2> re_;
  std::string text_;
};

}  // namespace fusesim::hw
