// Formatting of diagnostics and the edit-distance helpers behind
// "did you mean" notes.
#include "generator/support/diagnostics.h"

#include <algorithm>
#include <numeric>

namespace accgen {

std::string SourceLoc::str() const {
  std::string s = file;
  if (line > 0) {
    s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  return s;
}

std::string Diagnostic::format() const {
  static constexpr const char* kNames[] = {"error", "warning", "note"};
  std::string s;
  if (!loc.file.empty()) s += loc.str() + ": ";
  s += kNames[static_cast<int>(severity)];
  s += ": " + message + "\n";
  for (const auto& note : notes)
    s += "note: " + note + "\n";
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
  for (const auto& d : diags_)
    os << d.format();
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
