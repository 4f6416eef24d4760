// Text from input made safe for a terminal (issue 22): a case id, a scenario name, a kernel name or
// an error message naming them reaches the user's terminal, where ESC sequences would recolour,
// move the cursor, retitle the window or hide what came before, and a carriage return would
// overwrite the line it is on. Header-only: the trace module (which links no hw library) uses it too.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace fusesim::hw {

/**
 * `s` with every non-printable character written as an escape: tab, newline and carriage return as
 * `\t`, `\n`, `\r`; other C0 controls, DEL, the C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) and
 * every byte of an invalid UTF-8 sequence as `\xHH`; a backslash stays a single backslash (the
 * result is for reading, not for parsing back). Valid printable UTF-8 (other scripts, symbols) is
 * kept. `keep_newlines`: keep '\n' (and tab) as they are, for multi-line messages; '\r' is escaped
 * either way. Never throws beyond std::bad_alloc.
 */
inline std::string printable(std::string_view s, bool keep_newlines = false) {
  std::string o;
  o.reserve(s.size());
  auto hex = [&o](unsigned char c) {
    char b[5];
    std::snprintf(b, sizeof b, "\\x%02x", c);
    o += b;
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n') o += keep_newlines ? "\n" : "\\n";
      else if (c == '\t') o += keep_newlines ? "\t" : "\\t";
      else if (c == '\r') o += "\\r";
      else if (c < 0x20 || c == 0x7f) hex(c);
      else o += char(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: lead byte and 1-3 continuation bytes, no overlong forms or surrogates.
    const size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    const auto c1 = ok ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (ok && len == 2) ok = c >= 0xc2 && !(c == 0xc2 && c1 < 0xa0);  // overlong; C1 controls
    if (ok && len == 3) ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    if (ok && len == 4) ok = c <= 0xf4 && !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    if (ok) {
      o.append(s.substr(i, len));
      i += len;
    } else {
      hex(c);
      ++i;
    }
  }
  return o;
}

}  // namespace fusesim::hw
