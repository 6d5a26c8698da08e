// Measures the emulated device runtime against its targets in one run:
//  - copy bandwidth of 64 MiB H2D, D2H, D2D next to a plain host memcpy of
//    the same size (target: at least 80% of memcpy);
//  - latency of launching an empty kernel, of launch + synchronize and of
//    a synchronous launch (targets: median <= 2 us, <= 10 us, <= 1 us);
//  - accMalloc + accFree of 1 MiB;
//  - the access guard (Note [Device memory access]): a kernel touching one
//    buffer, and a 4-byte device-to-host copy, with the guard on and off.
//    The guard is fixed per process: this process turns it on, and the
//    "off" column comes from a child run with ACCGEN_EMU_PROTECT=0.
//
// Usage: emulator_bench [--quick]   (--quick: fewer repetitions)
#include <accgen/driver.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Stats {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

Stats stats(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&samples](double q) {
    return samples[static_cast<size_t>(
        q * static_cast<double>(samples.size() - 1))];
  };
  return {at(0.5), at(0.9), at(0.99)};
}

void check(accError_t error, const char* what) {
  if (error != accSuccess) {
    std::fprintf(stderr, "emulator_bench: %s failed: %s\n", what,
                 accGetErrorName(error));
    std::exit(1);
  }
}

accError_t emptyKernel(void*) {
  return accSuccess;
}

accError_t touchKernel(void* data) {
  static_cast<volatile unsigned char*>(data)[0] = 1;
  return accSuccess;
}

struct Options {
  int copy_reps = 20;
  int latency_reps = 20000;
  int alloc_reps = 2000;
};

// GB/s of one run of `copy` over `bytes`.
template <typename Copy>
double rate(size_t bytes, Copy&& copy) {
  const auto start = Clock::now();
  copy();
  return static_cast<double>(bytes) / secondsSince(start) / 1e9;
}

// Per-iteration latency in microseconds.
template <typename Body>
Stats latency(int reps, Body&& body) {
  for (int i = 0; i < reps / 10; ++i) {
    body();
  }
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    body();
    samples.push_back(secondsSince(start) * 1e6);
  }
  return stats(samples);
}

// The measurements that depend on the access guard: launch + synchronize
// of a kernel touching one fully populated buffer of each size (mprotect
// cost grows with the populated page-table entries), a synchronous launch
// of a kernel touching the smallest one, then a 4-byte device-to-host copy.
constexpr size_t kGuardSizes[] = {size_t{4} << 10, size_t{256} << 10,
                                  size_t{64} << 20};
constexpr const char* kGuardLabels[] = {
    "launch + sync, kernel touching 4 KiB buffer",
    "launch + sync, kernel touching 256 KiB buffer",
    "launch + sync, kernel touching 64 MiB buffer",
    "sync launch, kernel touching 4 KiB buffer", "accMemcpy D2H of 4 bytes"};
constexpr size_t kGuardFigures = std::size(kGuardLabels);

std::vector<double> measureGuard(const Options& options) {
  std::vector<double> medians;
  for (size_t size : kGuardSizes) {
    void* dev = nullptr;
    check(accMalloc(&dev, size), "accMalloc");
    check(accMemset(dev, 0, size), "accMemset");
    const void* buffers[] = {dev};
    medians.push_back(
        latency(options.latency_reps / 4, [&] {
          check(accLaunchKernel(nullptr, touchKernel, dev, buffers, 1),
                "launch");
          check(accStreamSynchronize(nullptr), "synchronize");
        }).p50);
    check(accFree(dev), "accFree");
  }
  void* dev = nullptr;
  check(accMalloc(&dev, 4096), "accMalloc");
  check(accMemset(dev, 0, 4096), "accMemset");
  const void* buffers[] = {dev};
  medians.push_back(
      latency(options.latency_reps / 4, [&] {
        check(accLaunchKernelSync(nullptr, touchKernel, dev, buffers, 1),
              "synchronous launch");
      }).p50);
  int value = 0;
  medians.push_back(
      latency(options.latency_reps, [&] {
        check(accMemcpy(&value, dev, sizeof(value), accMemcpyDeviceToHost),
              "copy");
      }).p50);
  check(accFree(dev), "accFree");
  return medians;
}

void printRow(const char* name, double value, const char* unit,
              const char* target, bool met) {
  std::printf("%-44s %10.2f %-6s %-16s %s\n", name, value, unit, target,
              met ? "ok" : "MISSED");
}

void printRow(const char* name, double value, const char* unit) {
  std::printf("%-44s %10.2f %-6s\n", name, value, unit);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool guard_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      options = {3, 2000, 200};
    } else if (std::strcmp(argv[i], "--guard-only") == 0) {
      guard_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }

  if (guard_only) {
    // Child mode: print the guard-dependent figures for the parent.
    for (double median : measureGuard(options)) {
      std::printf("%f\n", median);
    }
    return 0;
  }

  // This process measures with the guard on (the emulator's default is
  // off); the child run measures without it.
  setenv("ACCGEN_EMU_PROTECT", "1", 1);
  std::printf("accgen emulator benchmark (guard on in this process)\n\n");

  // ------------------------------------------------------------ bandwidth
  const size_t bytes = size_t{64} << 20;
  std::vector<unsigned char> host_a(bytes, 1);
  std::vector<unsigned char> host_b(bytes, 2);
  void* dev_a = nullptr;
  void* dev_b = nullptr;
  check(accMalloc(&dev_a, bytes), "accMalloc");
  check(accMalloc(&dev_b, bytes), "accMalloc");

  void* pinned = nullptr;
  check(accMallocHost(&pinned, bytes), "accMallocHost");
  std::memset(pinned, 3, bytes);
  // The copies and the reference take turns, and each copy is compared
  // with the reference run just before it: the load of a shared machine
  // drifts by tens of percent within seconds.
  const std::function<void()> copies[] = {
      [&] {
        std::memcpy(host_b.data(), host_a.data(), bytes);
        asm volatile("" : : "r"(host_b.data()) : "memory");
      },
      [&] {
        check(accMemcpy(dev_a, host_a.data(), bytes, accMemcpyHostToDevice),
              "H2D");
      },
      [&] {
        check(accMemcpy(host_b.data(), dev_a, bytes, accMemcpyDeviceToHost),
              "D2H");
      },
      [&] {
        check(accMemcpy(dev_b, dev_a, bytes, accMemcpyDeviceToDevice), "D2D");
      },
      [&] {
        check(accMemcpyAsync(dev_a, pinned, bytes, accMemcpyHostToDevice,
                             nullptr),
              "H2D async");
        check(accStreamSynchronize(nullptr), "synchronize");
      },
  };
  constexpr size_t kCopies = std::size(copies);
  for (const auto& copy : copies) {
    copy();  // warm-up: first touch of every page
  }
  std::vector<double> rates[kCopies];
  std::vector<double> ratios[kCopies];
  for (int rep = 0; rep < options.copy_reps; ++rep) {
    for (size_t i = 1; i < kCopies; ++i) {
      const double reference = rate(bytes, copies[0]);
      const double measured = rate(bytes, copies[i]);
      rates[0].push_back(reference);
      rates[i].push_back(measured);
      ratios[i].push_back(measured / reference);
    }
  }
  check(accFreeHost(pinned), "accFreeHost");
  check(accFree(dev_a), "accFree");
  check(accFree(dev_b), "accFree");

  std::printf("%-44s %10s %-6s %-16s %s\n", "measurement", "value", "unit",
              "target", "");
  printRow("memcpy 64 MiB (host, reference)", stats(rates[0]).p50, "GB/s");
  const char* const names[kCopies] = {
      nullptr, "accMemcpy H2D 64 MiB", "accMemcpy D2H 64 MiB",
      "accMemcpy D2D 64 MiB", "accMemcpyAsync H2D 64 MiB pinned + sync"};
  for (size_t i = 1; i < kCopies; ++i) {
    const double ratio = stats(ratios[i]).p50;
    char label[96];
    std::snprintf(label, sizeof(label), "%s (%.0f%% of memcpy)", names[i],
                  100.0 * ratio);
    printRow(label, stats(rates[i]).p50, "GB/s", ">= 80% memcpy", ratio >= 0.8);
  }

  // -------------------------------------------------------------- latency
  const Stats launch = latency(options.latency_reps, [] {
    check(accLaunchKernel(nullptr, emptyKernel, nullptr, nullptr, 0), "launch");
  });
  check(accStreamSynchronize(nullptr), "synchronize");
  const Stats launch_sync = latency(options.latency_reps, [] {
    check(accLaunchKernel(nullptr, emptyKernel, nullptr, nullptr, 0), "launch");
    check(accStreamSynchronize(nullptr), "synchronize");
  });
  accStream_t stream = nullptr;
  check(accStreamCreate(&stream), "accStreamCreate");
  const Stats launch_sync_stream = latency(options.latency_reps, [stream] {
    check(accLaunchKernel(stream, emptyKernel, nullptr, nullptr, 0), "launch");
    check(accStreamSynchronize(stream), "synchronize");
  });
  check(accStreamDestroy(stream), "accStreamDestroy");
  const Stats launch_sync_call = latency(options.latency_reps, [] {
    check(accLaunchKernelSync(nullptr, emptyKernel, nullptr, nullptr, 0),
          "synchronous launch");
  });
  printRow("launch empty kernel, median", launch.p50, "us", "<= 2 us",
           launch.p50 <= 2.0);
  printRow("launch empty kernel, p99", launch.p99, "us");
  printRow("launch + synchronize, median", launch_sync.p50, "us", "<= 10 us",
           launch_sync.p50 <= 10.0);
  printRow("launch + synchronize, p99", launch_sync.p99, "us");
  printRow("launch + synchronize (created stream), median",
           launch_sync_stream.p50, "us", "<= 10 us",
           launch_sync_stream.p50 <= 10.0);
  printRow("accLaunchKernelSync (idle stream), median", launch_sync_call.p50,
           "us", "<= 1 us", launch_sync_call.p50 <= 1.0);

  // ----------------------------------------------------------- allocation
  const Stats alloc = latency(options.alloc_reps, [] {
    void* ptr = nullptr;
    check(accMalloc(&ptr, size_t{1} << 20), "accMalloc");
    check(accFree(ptr), "accFree");
  });
  printRow("accMalloc + accFree 1 MiB, median", alloc.p50, "us");

  // ---------------------------------------------------------------- guard
  const std::vector<double> here = measureGuard(options);
  std::string command = "ACCGEN_EMU_PROTECT=0 '";
  command += argv[0];
  command += "' --guard-only";
  if (options.latency_reps != Options().latency_reps) {
    command += " --quick";
  }
  std::vector<double> off(kGuardFigures, -1.0);
  if (FILE* child = popen(command.c_str(), "r")) {
    for (double& value : off) {
      if (std::fscanf(child, "%lf", &value) != 1) {
        value = -1.0;
      }
    }
    pclose(child);
  }
  std::printf("\n%-48s %10s %10s %10s\n", "access guard (median)", "this run",
              "guard off", "cost");
  for (size_t i = 0; i < kGuardFigures; ++i) {
    std::printf("%-48s %7.2f us %7.2f us %7.2f us\n", kGuardLabels[i], here[i],
                off[i], here[i] - off[i]);
  }
  return 0;
}
