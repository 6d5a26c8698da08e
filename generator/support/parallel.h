// Work split in two, for the two cores any machine running accgen has: the
// large steps of a run (parsing native_functions.yaml, building the data of
// thousands of kernels, rendering thousands of files) are loops over
// independent items.
#pragma once

#include <cstddef>
#include <exception>
#include <thread>
#include <utility>

namespace accgen {

/// Runs `work(0)` on this thread and `work(1)` on a second one, waits for
/// both and rethrows the exception of part 0 if it threw, else that of part
/// 1: with parts that are the first and the second half of a list, the
/// error a sequential loop would have met first.
template <typename Work>
void inTwoParts(Work&& work) {
  std::exception_ptr errors[2];
  std::thread second([&] {
    try {
      work(1);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  try {
    work(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  second.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

/// The [begin, end) range of `part` (0 or 1) of `size` items split in half.
inline std::pair<std::size_t, std::size_t> half(std::size_t size, int part) {
  const std::size_t mid = size / 2;
  return part == 0 ? std::pair{std::size_t{0}, mid} : std::pair{mid, size};
}

}  // namespace accgen
