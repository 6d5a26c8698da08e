// The characters of an identifier, as TorchScript schemas, C++ and Python
// spell them: ASCII letters, digits and the underscore, whatever the locale.
#pragma once

namespace accgen {

inline bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline bool isIdentChar(char c) {
  return isIdentStart(c) || (c >= '0' && c <= '9');
}

}  // namespace accgen
