// <package>._C: the Python bindings of the device runtime. The device module
// (_device.py, shipped in the package) builds torch.<device> on top of
// these;
// streams and events reach Python as torch.Stream / torch.Event through
// the device guard, so this module only hands out stream ids.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <ATen/Context.h>
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/profiler/python/combined_traceback.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/utils/python_numbers.h>
#include <torch/library.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "accgen/runtime/Distributed.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/MemoryHistory.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"
#include "accgen/runtime/Tuning.h"

namespace py = pybind11;

namespace accgen::runtime {
namespace {

std::atomic<bool> g_initialized{false};
std::atomic<bool> g_in_bad_fork{false};

// Note [Fork]
// ~~~~~~~~~~~
// As with CUDA, only a child of a process that initialized the device
// (_lazy_init, run by torch before the first device tensor) may not use it:
// the driver's worker threads do not survive fork(). import, device_count()
// and is_available() leave a process that forks freely (the driver refuses
// only a child forked after a worker started, Note [Runtime lifetime] in
// runtime_emulator/src/runtime.h). torch's fork handler for PrivateUse1
// makes the child's next device tensor run _lazy_init again, which raises
// "Cannot re-initialize"; ours covers calls that do not pass through it.
void markChildAfterFork() {
  if (g_initialized.load()) {
    g_in_bad_fork.store(true);
  }
}

bool inBadFork() {
  return g_in_bad_fork.load() ||
         torch::utils::is_device_in_bad_fork(kDeviceType);
}

void lazyInit() {
  TORCH_CHECK(!inBadFork(), "Cannot re-initialize ", kDeviceName,
              " in a forked subprocess. Use the 'spawn' "
              "start method with multiprocessing.");
  torch::utils::register_fork_handler_for_device_init(kDeviceType);
  at::globalContext().lazyInitDevice(kDeviceType);
  g_initialized.store(true);
}

// Note [Memory history] in runtime/src/Allocator.cpp: the allocator's
// segments and trace as torch.cuda.memory._snapshot() gives them, with
// each stack symbolized into frames ({"filename", "line", "name"}).
py::dict memorySnapshotDict() {
  const MemorySnapshot snapshot = memorySnapshot();
  // Every stack once, symbolized together.
  std::vector<torch::CapturedTraceback*> stacks;
  std::unordered_map<const c10::GatheredContext*, std::size_t> index;
  auto add = [&](const std::shared_ptr<c10::GatheredContext>& context) {
    if (context && index.emplace(context.get(), stacks.size()).second) {
      stacks.push_back(static_cast<torch::CapturedTraceback*>(context.get()));
    }
  };
  for (const MemorySegment& segment : snapshot.segments) {
    add(segment.context);
  }
  for (const auto& trace : snapshot.traces) {
    for (const MemoryTraceEntry& entry : trace) {
      add(entry.context);
    }
  }
  const std::vector<py::object> frames = torch::py_symbolize(stacks);
  auto framesOf = [&](const std::shared_ptr<c10::GatheredContext>& context) {
    return context ? frames[index.at(context.get())] : py::list();
  };
  static constexpr const char* kStates[] = {"active_allocated",
                                            "active_pending_free", "inactive"};
  py::list segments;
  for (const MemorySegment& s : snapshot.segments) {
    const bool active = s.state != MemorySegment::State::kInactive;
    const bool allocated = s.state == MemorySegment::State::kActiveAllocated;
    py::dict block;
    block["address"] = s.address;
    block["size"] = s.size;
    block["requested_size"] = active ? s.requested : 0;
    block["state"] = kStates[static_cast<int>(s.state)];
    block["frames"] = active ? framesOf(s.context) : py::list();
    py::dict segment;
    segment["device"] = static_cast<int>(s.device);
    segment["address"] = s.address;
    segment["total_size"] = s.size;
    segment["allocated_size"] = allocated ? s.size : 0;
    segment["active_size"] = active ? s.size : 0;
    segment["requested_size"] = active ? s.requested : 0;
    segment["stream"] = s.stream;
    segment["segment_type"] = s.small ? "small" : "large";
    segment["segment_pool_id"] = py::make_tuple(s.pool.first, s.pool.second);
    segment["is_expandable"] = false;
    segment["frames"] = framesOf(s.context);
    py::list blocks;
    blocks.append(block);
    segment["blocks"] = blocks;
    segments.append(segment);
  }
  static constexpr const char* kActions[] = {"alloc",          "free_requested",
                                             "free_completed", "segment_alloc",
                                             "segment_free",   "oom"};
  py::list traces;
  for (const auto& trace : snapshot.traces) {
    py::list entries;
    for (const MemoryTraceEntry& e : trace) {
      py::dict entry;
      entry["action"] = kActions[static_cast<int>(e.action)];
      entry["addr"] = e.addr;
      entry["size"] = e.size;
      entry["stream"] = e.stream;
      entry["time_us"] = e.time_us;
      entry["frames"] = framesOf(e.context);
      if (e.action == MemoryTraceEntry::Action::kOom) {
        entry["device_free"] = e.device_free;
      }
      entries.append(entry);
    }
    traces.append(entries);
  }
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = traces;
  result["allocator_settings"] = py::dict();
  return result;
}

py::tuple packStream(const c10::Stream& stream) {
  return py::make_tuple(stream.id(),
                        static_cast<int64_t>(stream.device_index()),
                        static_cast<int64_t>(stream.device_type()));
}

py::dict statToDict(const c10::CachingAllocator::Stat& stat) {
  py::dict result;
  result["current"] = stat.current;
  result["peak"] = stat.peak;
  result["allocated"] = stat.allocated;
  result["freed"] = stat.freed;
  return result;
}

py::dict statArrayToDict(const c10::CachingAllocator::StatArray& stats) {
  static const char* const kNames[] = {"all", "small_pool", "large_pool"};
  py::dict result;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    result[kNames[i]] = statToDict(stats[i]);
  }
  return result;
}

py::dict memoryStats(c10::DeviceIndex device) {
  const c10::CachingDeviceAllocator::DeviceStats stats =
      getDeviceAllocator()->getDeviceStats(resolveDevice(device));
  py::dict result;
  result["allocation"] = statArrayToDict(stats.allocation);
  result["segment"] = statArrayToDict(stats.segment);
  result["active"] = statArrayToDict(stats.active);
  result["inactive_split"] = statArrayToDict(stats.inactive_split);
  result["allocated_bytes"] = statArrayToDict(stats.allocated_bytes);
  result["reserved_bytes"] = statArrayToDict(stats.reserved_bytes);
  result["active_bytes"] = statArrayToDict(stats.active_bytes);
  result["inactive_split_bytes"] = statArrayToDict(stats.inactive_split_bytes);
  result["requested_bytes"] = statArrayToDict(stats.requested_bytes);
  result["num_alloc_retries"] = stats.num_alloc_retries;
  result["num_ooms"] = stats.num_ooms;
  result["num_device_alloc"] = stats.num_device_alloc;
  result["num_device_free"] = stats.num_device_free;
  return result;
}

py::dict hostMemoryStats() {
  const at::HostStats stats = getHostAllocator()->get_stats();
  py::dict result;
  result["allocations"] = statToDict(stats.allocations);
  result["allocated_bytes"] = statToDict(stats.allocated_bytes);
  result["active_requests"] = statToDict(stats.active_requests);
  result["active_bytes"] = statToDict(stats.active_bytes);
  result["num_host_alloc"] = stats.num_host_alloc;
  result["num_host_free"] = stats.num_host_free;
  return result;
}

py::dict devicePropertiesDict(c10::DeviceIndex device) {
  const accDeviceProp prop = deviceProperties(device);
  py::dict result;
  result["name"] = std::string(prop.name);
  result["total_memory"] = prop.totalGlobalMem;
  result["multi_processor_count"] = prop.multiProcessorCount;
  result["major"] = prop.major;
  result["minor"] = prop.minor;
  return result;
}

// Routes operators of the backend through one of the fallbacks while it
// lives, in place of their registered kernels, which come back when it is
// closed: what bench/ops_bench.py measures each fallback with.
class FallbackRoute {
 public:
  FallbackRoute(const std::vector<std::string>& ops,
                const std::string& fallback) {
    TORCH_CHECK(fallback == "emulate" || fallback == "cpu",
                "fallback must be 'emulate' or 'cpu', not '", fallback, "'");
    library_.emplace(torch::Library::IMPL, "aten",
                     c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    for (const std::string& op : ops) {
      library_->impl(
          op.c_str(),
          fallback == "emulate"
              ? torch::CppFunction::makeFromBoxedFunction<&emulateFallback>()
              : torch::CppFunction::makeFromBoxedFunction<&cpuFallback>());
    }
  }
  void close() { library_.reset(); }

 private:
  std::optional<torch::Library> library_;
};

// Note [Compiled kernels on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.compile lowers a device graph with Inductor's C++ code generation
// (the emulated device's memory is host memory), and its Python wrapper
// calls each compiled kernel through here (runtime/python/_compile.py)
// rather than directly: the kernel is device work, run on the current stream
// after the work queued there, with access to exactly the allocations of its
// tensor arguments (so it also runs under the access guard), each checked
// to lie within its storage first. The kernel is
// entered through the compiled module's Python binding, which needs the
// GIL. When the stream is idle the driver runs it here at once
// (accLaunchIfIdle) and the caller keeps the GIL, as a compiled CPU kernel
// does: nothing waits. Otherwise the caller waits without the GIL, and the
// kernel takes it back on whichever thread the driver runs it. The call is
// a vectorcall function of its own (no argument tuples): small graphs make
// it once per fused kernel, and it costs about as much as the kernel.

// The binding's call, made with the GIL held; a Python error it raises is
// kept (a pybind11 error holds it across threads) and raised again by the
// caller.
struct CompiledCall {
  PyObject* kernel;
  PyObject* const* args;
  std::size_t nargs;

  void operator()() const {
    PyObject* result = PyObject_Vectorcall(kernel, args, nargs, nullptr);
    if (result == nullptr) {
      throw py::error_already_set();
    }
    Py_DECREF(result);
  }
};

// _launch_compiled(kernel, *args): METH_FASTCALL.
PyObject* launchCompiled(PyObject* /*module*/, PyObject* const* args,
                         Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  TORCH_CHECK(nargs >= 1, "_launch_compiled(kernel, *args): no kernel given");
  c10::SmallVector<const void*, 16> buffers;
  c10::DeviceIndex device = -1;
  for (Py_ssize_t i = 1; i < nargs; ++i) {
    if (!THPVariable_Check(args[i])) {
      continue;
    }
    const at::Tensor& tensor = THPVariable_Unpack(args[i]);
    if (tensor.device().type() != kDeviceType) {
      continue;
    }
    if (device < 0) {
      device = tensor.device().index();
    }
    // Note [Device misuse]: the kernel reads and writes the geometry it was
    // compiled for; a storage resized since (resize_ on it) is refused
    // before the kernel touches memory past it, as an eager call is.
    emulate::checkInBounds(tensor);
    if (const void* data = tensor.storage().data(); data != nullptr) {
      buffers.push_back(data);
    }
  }
  if (device < 0) {
    device = currentDevice();
  }
  const CompiledCall call{args[0], args + 1,
                          static_cast<std::size_t>(nargs - 1)};
  if (!emulate::runOnDeviceIfIdle(device, buffers, call)) {
    const py::gil_scoped_release no_gil;
    emulate::runOnDevice(device, buffers, [&] {
      const py::gil_scoped_acquire gil;
      call();
    });
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

// _empty_strided(size, stride, dtype, device): METH_FASTCALL. The buffers
// of a compiled graph's wrapper come from here, as Inductor's own
// empty_strided_cpu serves the CPU's, so it parses its arguments itself.
PyObject* emptyStridedFast(PyObject* /*module*/, PyObject* const* args,
                           Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  TORCH_CHECK(nargs == 4 && PyTuple_Check(args[0]) && PyTuple_Check(args[1]) &&
                  THPDtype_Check(args[2]) && PyLong_Check(args[3]),
              "_empty_strided(size: tuple, stride: tuple, dtype, device: int)");
  const auto ints = [](PyObject* tuple) {
    c10::SmallVector<int64_t, 8> values;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
      values.push_back(THPUtils_unpackLong(PyTuple_GET_ITEM(tuple, i)));
    }
    return values;
  };
  const auto size = ints(args[0]);
  const auto stride = ints(args[1]);
  TORCH_CHECK(size.size() == stride.size(), "_empty_strided: ", size.size(),
              " sizes but ", stride.size(), " strides");
  return THPVariable_Wrap(emptyStrided(
      size, stride, reinterpret_cast<THPDtype*>(args[2])->scalar_type,
      static_cast<c10::DeviceIndex>(THPUtils_unpackLong(args[3]))));
  END_HANDLE_TH_ERRORS
}

using FastcallFn = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t);

// Adds `Fn` to `m` as a METH_FASTCALL function: called without an argument
// tuple or pybind11's overload dispatch.
template <FastcallFn Fn>
void defFastcall(py::module_& m, const char* name) {
  static PyMethodDef def = {
      name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Fn)),
      METH_FASTCALL, nullptr};
  m.attr(name) = py::reinterpret_steal<py::object>(
      PyCFunction_NewEx(&def, nullptr, m.ptr()));
}

// The kernel of _sleep: occupies its stream for the microseconds it is
// given, without touching device memory.
accError_t sleepKernel(void* user_data) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(reinterpret_cast<std::intptr_t>(user_data)));
  return accSuccess;
}

}  // namespace
}  // namespace accgen::runtime

PYBIND11_MODULE(_C, m) {
  using namespace accgen::runtime;
  m.doc() = std::string("Bindings of the ") + kDeviceName + " device runtime";
  initDriver();
  pthread_atfork(nullptr, nullptr, &markChildAfterFork);

  // --8<-- [start:module-config]
  // The backend's settings (accgen_config.h) and whether it holds the
  // device type (Note [One PrivateUse1 backend per process]).
  py::dict config;
  config["device"] = kDeviceName;
  config["package"] = kPackageName;
  config["env_prefix"] = kEnvPrefix;
  config["pinned_memory"] = kPinnedMemory;
  config["autocast"] = kAutocast;
  m.attr("_config") = config;
  m.def("_owns_device", &ownsDevice);
  m.def("_device_taken_by", &deviceTakenBy);
  // --8<-- [end:module-config]

  const auto no_gil = py::call_guard<py::gil_scoped_release>();

  m.def("_init", &lazyInit, no_gil);
  m.def("_is_in_bad_fork", &inBadFork);
  m.def("_get_device_count", [] { return static_cast<int>(deviceCount()); });
  m.def("_get_device", [] { return static_cast<int>(currentDevice()); });
  m.def("_set_device", [](int device) {
    if (device >= 0) {
      setDevice(static_cast<c10::DeviceIndex>(device));
    }
  });
  m.def("_exchange_device", [](int device) {
    if (device < 0) {
      return -1;
    }
    return static_cast<int>(
        exchangeDevice(static_cast<c10::DeviceIndex>(device)));
  });
  m.def(
      "_synchronize",
      [](int device) {
        const c10::DeviceGuard guard(
            c10::Device(kDeviceType, resolveDevice(device)));
        ACCGEN_CHECK(accDeviceSynchronize());
      },
      no_gil);
  m.def("_get_device_properties", &devicePropertiesDict);

  m.def("_get_current_stream", [](int device) {
    return packStream(getCurrentStream(static_cast<c10::DeviceIndex>(device)));
  });
  m.def("_get_default_stream", [](int device) {
    return packStream(accgen::runtime::getDefaultStream(
        static_cast<c10::DeviceIndex>(device)));
  });
  m.def("_set_stream",
        [](int64_t stream_id, int64_t device_index, int64_t device_type) {
          const c10::Stream stream = c10::Stream::unpack3(
              stream_id, static_cast<c10::DeviceIndex>(device_index),
              static_cast<c10::DeviceType>(device_type));
          (void)exchangeCurrentStream(stream);
        });
  m.def("_sleep", [](std::int64_t microseconds) {
    TORCH_CHECK(microseconds >= 0, "_sleep: a negative duration");
    ACCGEN_CHECK(accLaunchKernel(
        currentNativeStream(), &sleepKernel,
        reinterpret_cast<void*>(static_cast<std::intptr_t>(microseconds)),
        nullptr, 0));
  });
  defFastcall<&launchCompiled>(m, "_launch_compiled");
  m.def("_begin_exit", [] {
    // Note [Exit with device work in flight]: a thread that waits for the
    // GIL after a device operator gets it now, returns to Python and parks
    // in its next device kernel, before the interpreter finalizes.
    if (emulate::beginExit()) {
      const py::gil_scoped_release release;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  m.def("_distributed_backend_name", &distributedBackendName);
  m.def("_drain_collectives", [] {
    // Note [Exit with device work in flight]: the GIL is released, which
    // lets other threads run on, only when there is something to wait for.
    if (collectivesPending()) {
      const py::gil_scoped_release release;
      drainCollectives();
    }
  });
  m.def("_make_process_group", [](const c10::intrusive_ptr<c10d::Store>& store,
                                  int rank, int size,
                                  std::chrono::milliseconds timeout,
                                  const py::function& host_group) {
    // Called only while the group is made, in this call, with the GIL.
    return makeDistributedBackend(store, rank, size, timeout, [&](int index) {
      return host_group(index).cast<c10::intrusive_ptr<c10d::Backend>>();
    });
  });
  defFastcall<&emptyStridedFast>(m, "_empty_strided");
  m.def("_stream_priority_range", [] {
    const auto [least, greatest] = streamPriorityRange();
    return py::make_tuple(least, greatest);
  });

  m.def("_get_default_generator", [](int device) {
    const at::Generator& generator = accgen::runtime::getDefaultGenerator(
        static_cast<c10::DeviceIndex>(device));
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(generator));
  });

  py::class_<FallbackRoute>(m, "_FallbackRoute")
      .def(py::init<const std::vector<std::string>&, const std::string&>())
      .def("close", &FallbackRoute::close);
  m.def("_fallback_counts", [] {
    py::dict counts;
    for (const FallbackCount& c : fallbackCounts()) {
      if (!counts.contains(c.fallback)) {
        counts[py::str(c.fallback)] = py::dict();
      }
      counts[py::str(c.fallback)][py::str(c.op)] = c.calls;
    }
    return counts;
  });
  m.def("_structured_loop_counts", [] {
    py::dict counts;
    for (const auto& [op, calls] : structuredLoopCounts()) {
      counts[py::str(op)] = calls;
    }
    return counts;
  });
  m.def("_device_function_counts", [] {
    py::dict counts;
    for (const auto& [name, calls] : deviceFunctionCounts()) {
      counts[py::str(name)] = calls;
    }
    return counts;
  });
  m.def("_transfer_bytes", [] {
    const TransferBytes bytes = transferBytes();
    py::dict counts;
    counts["host_to_device"] = bytes.host_to_device;
    counts["device_to_host"] = bytes.device_to_host;
    return counts;
  });
  m.def("_host_addressable", [] { return hostComputes(); });
  m.def("_memory_stats", [](int device) {
    return memoryStats(static_cast<c10::DeviceIndex>(device));
  });
  m.def("_record_memory_history",
        [](bool enabled, bool stacks, std::size_t max_entries) {
          if (enabled && stacks) {
            torch::installCapturedTracebackPython();
          }
          recordMemoryHistory(enabled, stacks, max_entries);
        });
  m.def("_snapshot", &memorySnapshotDict);
  m.def("_reset_peak_memory_stats", [](int device) {
    getDeviceAllocator()->resetPeakStats(
        resolveDevice(static_cast<c10::DeviceIndex>(device)));
  });
  m.def("_reset_accumulated_memory_stats", [](int device) {
    getDeviceAllocator()->resetAccumulatedStats(
        resolveDevice(static_cast<c10::DeviceIndex>(device)));
  });
  m.def(
      "_empty_cache", [] { getDeviceAllocator()->emptyCache(); }, no_gil);
  m.def("_mem_get_info", [](int device) {
    const auto [free_bytes, total_bytes] = getDeviceAllocator()->getMemoryInfo(
        static_cast<c10::DeviceIndex>(device));
    return py::make_tuple(free_bytes, total_bytes);
  });
  if (kPinnedMemory) {
    m.def("_host_memory_stats", &hostMemoryStats);
    m.def(
        "_empty_host_cache", [] { getHostAllocator()->empty_cache(); }, no_gil);
  }
}
