// Preloaded (LD_PRELOAD) into the remote driver's device process by the
// window-collision tests in remote_test.cpp: before the device maps its
// memory, this takes a page at the address the host reserved for device 0,
// as one of the device process's own libraries may under address-space
// randomization. ACCGEN_TEST_COLLIDE names a file: the first device process
// to remove it collides, the ones after do not; "always" collides every
// time. In any other program it does nothing.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace {

__attribute__((constructor)) void collide() {
  const char* mode = std::getenv("ACCGEN_TEST_COLLIDE");
  if (mode == nullptr) {
    return;
  }
  std::ifstream file("/proc/self/cmdline");
  const std::string line((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < line.size(); at = line.find('\0', at) + 1) {
    args.emplace_back(line.c_str() + at);
  }
  const std::string& program = args.empty() ? line : args[0];
  const std::string name = program.substr(program.find_last_of('/') + 1);
  // argv: program, lifeline, bytes per device, device 0's window, ...
  if (name.rfind("accgen-remote-device", 0) != 0 || args.size() < 4) {
    return;
  }
  if (std::strcmp(mode, "always") != 0 && unlink(mode) != 0) {
    return;
  }
  const uint64_t base = std::strtoull(args[3].c_str(), nullptr, 16);
  mmap(reinterpret_cast<void*>(base), 4096, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}

}  // namespace
