// Parsing of the emulator's environment variables and the order in which
// they combine with accInit's hints. Parsers are strict (no sign, no spaces,
// no trailing garbage) so that a typo keeps the default instead of becoming a
// surprising value.
#include "config.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace accgen::emulator {
namespace {

// Parses the leading decimal digits of `text` into `value`; returns the
// position after them, or nullptr if there are none or the value overflows.
const char* parseDigits(const char* text, uint64_t& value) {
  if (text == nullptr || *text < '0' || *text > '9') {
    return nullptr;
  }
  value = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return nullptr;
    }
    value = value * 10 + digit;
  }
  return p;
}

}  // namespace

std::optional<int> parseDeviceCount(const char* text) {
  uint64_t value = 0;
  const char* end = parseDigits(text, value);
  if (end == nullptr || *end != '\0' || value < 1 ||
      value > static_cast<uint64_t>(kMaxDeviceCount)) {
    return std::nullopt;
  }
  return static_cast<int>(value);
}

std::optional<uint64_t> parseMemoryBytes(const char* text) {
  uint64_t value = 0;
  const char* end = parseDigits(text, value);
  if (end == nullptr) {
    return std::nullopt;
  }
  int shift = 0;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    default:
      return std::nullopt;
  }
  if (shift != 0) {
    ++end;
    if (std::strcmp(end, "iB") == 0) {
      end += 2;
    }
    if (*end != '\0') {
      return std::nullopt;
    }
    if (value > (std::numeric_limits<uint64_t>::max() >> shift)) {
      return std::nullopt;
    }
    value <<= shift;
  }
  if (value == 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<bool> parseFlag(const char* text) {
  if (text == nullptr) {
    return std::nullopt;
  }
  if (std::strcmp(text, "0") == 0) {
    return false;
  }
  if (std::strcmp(text, "1") == 0) {
    return true;
  }
  return std::nullopt;
}

std::optional<int64_t> parseSpinMicros(const char* text) {
  uint64_t value = 0;
  const char* end = parseDigits(text, value);
  if (end == nullptr || *end != '\0' ||
      value > static_cast<uint64_t>(kMaxSpinNs / 1000)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value) * 1000;
}

Config resolveConfig(int device_count_hint, uint64_t memory_hint) {
  Config config;
  if (device_count_hint > 0) {
    config.device_count = device_count_hint;
  }
  if (memory_hint > 0) {
    config.memory_per_device = memory_hint;
  }
  if (auto count = parseDeviceCount(std::getenv("ACCGEN_EMU_DEVICE_COUNT"))) {
    config.device_count = *count;
  }
  if (auto bytes = parseMemoryBytes(std::getenv("ACCGEN_EMU_MEMORY_BYTES"))) {
    config.memory_per_device = *bytes;
  }
  if (auto protect = parseFlag(std::getenv("ACCGEN_EMU_PROTECT"))) {
    config.protect = *protect;
  }
  if (auto spin = parseSpinMicros(std::getenv("ACCGEN_EMU_SPIN_US"))) {
    config.spin_ns = *spin;
  }
  if (auto graphs = parseFlag(std::getenv("ACCGEN_EMU_GRAPHS"))) {
    config.graphs = *graphs;
  }
  if (auto addressable =
          parseFlag(std::getenv("ACCGEN_EMU_HOST_ADDRESSABLE"))) {
    config.host_addressable = *addressable;
  }
  return config;
}

}  // namespace accgen::emulator
