// RE2-backed patterns for untrusted text (hw/name_pattern.hpp).
#include "hw/name_pattern.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <re2/re2.h>

namespace fusesim::hw {

NamePattern NamePattern::compile(const std::string& text, const std::string& what, bool case_insensitive, int64_t max_program_bytes) {
  RE2::Options opt;
  opt.set_encoding(RE2::Options::EncodingLatin1);
  opt.set_case_sensitive(!case_insensitive);
  opt.set_log_errors(false);
  opt.set_max_mem(max_program_bytes);
  auto re = std::make_shared<const RE2>(text, opt);
  if (!re->ok()) {
    std::string shown = text.size() > 200 ? text.substr(0, 200) + "..." : text;
    throw std::invalid_argument(fmt::format("{}: invalid regex '{}': {} (patterns use RE2 syntax: no lookaround, no backreferences)",
                                            what, shown, re->error()));
  }
  NamePattern p;
  p.re_ = std::move(re);
  p.text_ = text;
  return p;
}

int NamePattern::program_size() const { return re_ ? re_->ProgramSize() : 0; }

bool NamePattern::search(std::string_view s) const {
  return re_ && RE2::PartialMatch(re2::StringPiece(s.data(), s.size()), *re_);
}

bool NamePattern::full_match(std::string_view s) const {
  return re_ && RE2::FullMatch(re2::StringPiece(s.data(), s.size()), *re_);
}

bool NamePattern::search(std::string_view s, std::string* groups, int n) const {
  if (!re_ || n < 0 || re_->NumberOfCapturingGroups() < n) return false;
  std::vector<re2::StringPiece> sub(size_t(n) + 1);
  if (!re_->Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::UNANCHORED, sub.data(), n + 1)) return false;
  for (int i = 0; i < n; ++i) groups[i] = sub[size_t(i) + 1].data() ? std::string(sub[size_t(i) + 1]) : std::string();
  return true;
}

size_t NamePattern::count(std::string_view s, size_t limit) const {
  if (!re_) return 0;
  const re2::StringPiece text(s.data(), s.size());
  re2::StringPiece m;
  size_t n = 0, pos = 0;
  while (n < limit && pos <= s.size() && re_->Match(text, pos, s.size(), RE2::UNANCHORED, &m, 1)) {
    ++n;
    const size_t end = size_t(m.data() - s.data()) + m.size();
    pos = m.empty() ? end + 1 : end;
  }
  return n;
}

}  // namespace fusesim::hw
