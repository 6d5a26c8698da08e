// Tests of the remote driver alone: device memory is never mapped into the
// host process, a host dereference of a device pointer faults, the device
// process maps what the host cannot, and it dies with its host.
#include <accgen/driver.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driver_util.h"

namespace accgen::driver_test {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The permissions ("rw-p", "---p") of the mapping of `pid` holding `ptr`,
// or "" if none does.
std::string mappingOf(const std::string& pid, const void* ptr) {
  std::ifstream maps("/proc/" + pid + "/maps");
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) == 3 &&
        address >= start && address < end) {
      return perms;
    }
  }
  return "";
}

// The children of this process running the device program.
std::vector<std::string> devicePids() {
  std::vector<std::string> found;
  const std::string self = std::to_string(getpid());
  for (const std::string& task : {self}) {
    std::ifstream children("/proc/" + task + "/task/" + task + "/children");
    std::string pid;
    while (children >> pid) {
      std::ifstream comm("/proc/" + pid + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name.rfind("accgen-remote", 0) == 0) {
        found.push_back(pid);
      }
    }
  }
  return found;
}

TEST(Remote, DeviceMemoryIsNotMappedInTheHost) {
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 4096), accSuccess);
  ASSERT_EQ(accMemset(ptr, 1, 4096), accSuccess);
  // The host holds the address in a window it cannot read or write.
  EXPECT_EQ(mappingOf("self", ptr), "---p");
  // The device process holds the memory at the same address.
  const std::vector<std::string> pids = devicePids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(mappingOf(pids[0], ptr).substr(0, 2), "rw");
  EXPECT_EQ(accFree(ptr), accSuccess);
}

TEST(Remote, HostDereferenceOfADevicePointerFaults) {
  GTEST_FLAG_SET(death_test_style, "fast");
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 64), accSuccess);
  // Under a sanitizer, its SEGV report ends the process instead.
  const auto faulted = [](int status) {
    return (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
           (kSanitized && WIFEXITED(status) && WEXITSTATUS(status) != 0);
  };
  EXPECT_EXIT(
      {
        volatile char value = *static_cast<volatile char*>(ptr);
        (void)value;
        std::_Exit(0);
      },
      faulted, "");
  EXPECT_EQ(accFree(ptr), accSuccess);
}

TEST(Remote, ForkedChildCannotUseTheParentsDevice) {
  ASSERT_EQ(accSetDevice(0), accSuccess);
  const pid_t child = fork();
  if (child == 0) {
    int count = 0;
    std::_Exit(accGetDeviceCount(&count) == accErrorNotInitialized ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Run by DeviceProcessDiesWithItsHost in a process of its own: starts the
// device, prints its pid, and is killed. (Disabled: it runs only when that test
// asks for it.)
TEST(Remote, DISABLED_HelperStartsTheDeviceAndDies) {
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 64), accSuccess);
  const std::vector<std::string> pids = devicePids();
  ASSERT_EQ(pids.size(), 1u);
  std::printf("DEVICE_PID=%s\n", pids[0].c_str());
  std::fflush(stdout);
  raise(SIGKILL);
}

bool alive(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    return false;
  }
  // "pid (comm) S ...": a zombie has exited.
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         line[paren + 2] != 'Z';
}

// Runs the disabled test `helper` of this program in a process of its own,
// with `env` ("NAME=value ...") before it; its output.
std::string runHelper(const std::string& helper, const std::string& env = "") {
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) {
    return "";
  }
  const std::string command = env + " '" + self +
                              "' --gtest_also_run_disabled_tests"
                              " --gtest_filter=Remote." +
                              helper + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return "";
  }
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    output += buffer;
  }
  pclose(pipe);
  return output;
}

TEST(Remote, DeviceProcessDiesWithItsHost) {
  const std::string output = runHelper("DISABLED_HelperStartsTheDeviceAndDies");
  const size_t at = output.find("DEVICE_PID=");
  ASSERT_NE(at, std::string::npos) << output;
  std::string pid;
  std::istringstream(output.substr(at + 11)) >> pid;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (alive(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(alive(pid)) << "device process " << pid
                           << " outlived its killed host";
}

// Run by the collision tests below with the collider preloaded: the device
// works wherever its windows ended up.
TEST(Remote, DISABLED_HelperUsesTheDevice) {
  void* ptr = nullptr;
  ASSERT_EQ(accMalloc(&ptr, 4096), accSuccess);
  ASSERT_EQ(accMemset(ptr, 7, 4096), accSuccess);
  std::vector<char> back(4096);
  ASSERT_EQ(accMemcpy(back.data(), ptr, back.size(), accMemcpyDeviceToHost),
            accSuccess);
  EXPECT_EQ(back, std::vector<char>(4096, 7));
  EXPECT_EQ(mappingOf("self", ptr), "---p");
  EXPECT_EQ(accFree(ptr), accSuccess);
}

// Run by DeviceThatCannotMapItsMemoryIsAnError: no window works.
TEST(Remote, DISABLED_HelperCannotStartTheDevice) {
  void* ptr = nullptr;
  EXPECT_EQ(accMalloc(&ptr, 64), accErrorNotInitialized);
  int count = 0;
  EXPECT_EQ(accGetDeviceCount(&count), accErrorNotInitialized);
}

// The collider (collide.cpp) in the device process, and what makes it
// collide; a sanitizer's runtime must otherwise come first.
std::string collide(const std::string& mode) {
  return std::string("LD_PRELOAD='") + ACCGEN_TEST_COLLIDER +
         "' ACCGEN_TEST_COLLIDE='" + mode +
         "' ASAN_OPTIONS=\"${ASAN_OPTIONS}:verify_asan_link_order=0\"";
}

// Note [Where device windows go]: a device process that finds something of
// its own in a window is replaced by one at other addresses.
TEST(Remote, DeviceWindowsThatCollideMove) {
  char once[] = "/tmp/accgen-collide-XXXXXX";
  const int fd = mkstemp(once);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string output =
      runHelper("DISABLED_HelperUsesTheDevice", collide(once));
  // The first device process removed the file and collided.
  EXPECT_NE(access(once, F_OK), 0) << "the collider did not run";
  unlink(once);
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  EXPECT_EQ(output.find("could not map"), std::string::npos) << output;
}

TEST(Remote, DeviceThatCannotMapItsMemoryIsAnError) {
  const std::string output =
      runHelper("DISABLED_HelperCannotStartTheDevice", collide("always"));
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  // Each window tried is named; none is the host's usual mmap area.
  EXPECT_NE(output.find("the device process could not map device memory at "
                        "any of the windows tried: 0x3"),
            std::string::npos)
      << output;
}

}  // namespace
}  // namespace accgen::driver_test
