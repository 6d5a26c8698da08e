// Formatting of diagnostics and the edit-distance helpers behind
// "did you mean" notes.
#include "generator/support/diagnostics.h"

#include <algorithm>
#include <numeric>

#include "generator/support/io.h"

namespace accgen {

std::string SourceLoc::str() const {
  std::string s = file;
  if (line > 0) {
    s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  return s;
}

namespace {

// The longest text of one diagnostic line, and the most diagnostics print()
// shows.
constexpr std::size_t kMaxLineBytes = 1000;
constexpr std::size_t kMaxDiagnostics = 100;

// Whether code point `cp` is escaped when quoted: the C0 and C1 controls
// and DEL, the line and paragraph separators (U+2028, U+2029; a line break
// to JavaScript and some terminals), and the bidirectional controls, which
// reorder what a terminal shows (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069).
bool escaped(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// `text` as one safe line of a terminal or a log: every character escaped()
// names and every byte that is not UTF-8 (a spec value cannot start a
// forged "file:line: error:" line, move the cursor or reorder the line),
// and at most `max_bytes` of it.
std::string printable(std::string_view text,
                      std::size_t max_bytes = kMaxLineBytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  const auto hex = [&](unsigned char c) {
    out += "\\x";
    out += kDigits[c >> 4];
    out += kDigits[c & 0xF];
  };
  while (i < text.size() && out.size() < max_bytes) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (escaped(c)) {
        hex(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (firstInvalidUtf8(text.substr(i, std::min(length, text.size() - i))) ||
        i + length > text.size()) {
      hex(c);
      ++i;
      continue;
    }
    char32_t cp = length == 2 ? c & 0x1F : length == 3 ? c & 0x0F : c & 0x07;
    for (std::size_t k = 1; k < length; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    if (escaped(cp)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4)
        out += kDigits[(cp >> shift) & 0xF];
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  if (i < text.size()) {
    out += "... (" + std::to_string(text.size() - i) + " more bytes)";
  }
  return out;
}

}  // namespace

std::string printableLines(std::string_view text) {
  std::string out;
  for (;;) {
    const std::size_t end = text.find('\n');
    out.append(printable(text.substr(0, end), std::string_view::npos));
    if (end == std::string_view::npos) return out;
    out.push_back('\n');
    text.remove_prefix(end + 1);
  }
}

std::string Diagnostic::format() const {
  static constexpr const char* kNames[] = {"error", "warning", "note"};
  std::string s;
  if (!loc.file.empty()) s += printable(loc.str()) + ": ";
  s += kNames[static_cast<int>(severity)];
  s += ": " + printable(message) + "\n";
  for (const auto& note : notes)
    s += "note: " + printable(note) + "\n";
  return s;
}

void DiagnosticEngine::error(SourceLoc loc, std::string message,
                             std::vector<std::string> notes) {
  diags_.push_back(
      {Severity::kError, std::move(loc), std::move(message), std::move(notes)});
  ++error_count_;
}

void DiagnosticEngine::warning(SourceLoc loc, std::string message,
                               std::vector<std::string> notes) {
  diags_.push_back({Severity::kWarning, std::move(loc), std::move(message),
                    std::move(notes)});
}

void DiagnosticEngine::print(std::ostream& os) const {
  const std::size_t shown = std::min(diags_.size(), kMaxDiagnostics);
  for (std::size_t i = 0; i < shown; ++i)
    os << diags_[i].format();
  if (shown < diags_.size()) {
    os << "note: " << diags_.size() - shown
       << " more diagnostics not shown; fix these first\n";
  }
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string nearestName(std::string_view word,
                        const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // Length differences alone bound the distance from below; skip early.
    std::size_t len_gap = c.size() > word.size() ? c.size() - word.size()
                                                 : word.size() - c.size();
    if (len_gap >= best_distance) continue;
    std::size_t d = editDistance(word, c);
    if (d < best_distance || (d == best_distance && c < best)) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace accgen
