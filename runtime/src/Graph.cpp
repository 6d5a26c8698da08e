// torch.accelerator.Graph for the device: at::GraphImplInterface over the
// driver's stream capture (accgen/driver.h, "graphs") and the caching
// allocator's graph pools (Note [Graph memory pools] in Allocator.cpp).
//
// --8<-- [start:graphs-note]
// Note [Device graphs]
// ~~~~~~~~~~~~~~~~~~~~
// capture_begin starts the driver's capture on the current stream (never
// the default stream, as on CUDA) and routes the capture's allocations to
// the graph's pool: a new one, or the one passed in to share it. Every
// operator the capture sees must be one the device runs asynchronously
// (queued kernels, copies, memsets): the driver refuses what would
// synchronize (.item(), a copy to pageable host memory, a synchronous
// operator) with "operation not permitted when stream is capturing", and
// the capture is then invalidated, so capture_end raises too. capture_end
// instantiates the graph unless keep_graph asked to keep it for
// instantiate(); replay() launches it on the current stream, asynchronously
// to the host, as one unit of work. reset() (and destruction) waits for the
// graph's replays, destroys it and lets go of the pool.
// --8<-- [end:graphs-note]
#include <atomic>
#include <fstream>

#include <ATen/core/GraphImplInterface.h>
#include <c10/util/Exception.h>

#include "Internal.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

// Pool ids made by graphs: {0, n}, as torch.cuda.graph_pool_handle() makes
// them, so they never collide with user pools ({n, 0}).
std::atomic<c10::CaptureId_t> g_next_pool{1};

// Captures in progress (graphCaptureInProgress).
std::atomic<int> g_captures{0};

accStreamCaptureMode captureMode(at::GraphCaptureMode mode) {
  switch (mode) {
    case at::GraphCaptureMode::ThreadLocal:
      return accStreamCaptureModeThreadLocal;
    case at::GraphCaptureMode::Relaxed:
      return accStreamCaptureModeRelaxed;
    default:
      return accStreamCaptureModeGlobal;  // CUDA's default for torch
  }
}

class DeviceGraph final : public at::GraphImplInterface {
 public:
  explicit DeviceGraph(const at::GraphImplArgs& args)
      : keep_graph_(args.keep_graph) {}

  ~DeviceGraph() override {
    try {
      reset();
    } catch (const std::exception&) {
      // A destructor must not throw; the driver objects are released as far
      // as it allowed.
    }
  }

  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  void capture_begin(c10::MempoolId_t pool,
                     at::GraphCaptureMode mode) override {
    TORCH_CHECK(!captured_ && capture_id_ == 0,
                "this graph already holds a capture; reset() it before "
                "capturing again");
    device_ = currentDevice();
    const c10::Stream stream = getCurrentStream(device_);
    TORCH_CHECK(stream != getDefaultStream(device_), kDeviceName,
                " graphs must be captured on a non-default stream (however, "
                "after capture, it's ok to replay them on the default "
                "stream)");
    const accStream_t native = nativeStream(stream);
    const accError_t begun = accStreamBeginCapture(native, captureMode(mode));
    TORCH_CHECK(begun != accErrorNotSupported, "graphs are not supported on ",
                kDeviceName,
                ": its driver does not implement stream capture "
                "(accStreamBeginCapture returned accErrorNotSupported)");
    ACCGEN_CHECK(begun);
    accStreamCaptureStatus status = accStreamCaptureStatusNone;
    ACCGEN_CHECK(accStreamGetCaptureInfo(native, &status, &capture_id_));
    pool_ = pool != c10::MempoolId_t{0, 0}
                ? pool
                : c10::MempoolId_t{0, g_next_pool.fetch_add(1)};
    beginAllocateToPool(device_, pool_, capture_id_);
    g_captures.fetch_add(1, std::memory_order_relaxed);
    holds_pool_ = true;
    stream_ = native;
  }

  void capture_end() override {
    TORCH_CHECK(capture_id_ != 0, "capture_end() without capture_begin()");
    const accStream_t native = currentNativeStream(device_);
    TORCH_CHECK(native == stream_,
                "capture_end() must be called on the stream capture_begin() "
                "captured");
    accGraph_t graph = nullptr;
    const accError_t ended = accStreamEndCapture(native, &graph);
    endCapture();
    ACCGEN_CHECK(ended);
    graph_ = graph;
    captured_ = true;
    if (!keep_graph_) {
      instantiate();
      ACCGEN_CHECK(accGraphDestroy(graph_));
      graph_ = nullptr;
    }
  }

  void instantiate() override {
    TORCH_CHECK(captured_, "instantiate() needs a captured graph");
    TORCH_CHECK(graph_ != nullptr,
                "the graph was instantiated at capture_end(); construct it "
                "with keep_graph=True to instantiate it yourself");
    if (exec_ != nullptr) {
      ACCGEN_CHECK(accGraphExecDestroy(exec_));
      exec_ = nullptr;
    }
    ACCGEN_CHECK(accGraphInstantiate(&exec_, graph_));
  }

  void replay() override {
    TORCH_CHECK(captured_, "replay() needs a captured graph");
    if (exec_ == nullptr) {
      instantiate();  // keep_graph=True, not instantiated yet
    }
    ACCGEN_CHECK(accGraphLaunch(exec_, currentNativeStream(device_)));
  }

  void reset() override {
    if (capture_id_ != 0) {
      // Dropped mid-capture (an exception in the captured code): end the
      // driver's capture, whose graph is then useless.
      accGraph_t graph = nullptr;
      (void)accStreamEndCapture(stream_, &graph);
      if (graph != nullptr) {
        (void)accGraphDestroy(graph);
      }
      endCapture();
    }
    if (exec_ != nullptr) {
      ACCGEN_CHECK(accGraphExecDestroy(exec_));
      exec_ = nullptr;
    }
    if (graph_ != nullptr) {
      ACCGEN_CHECK(accGraphDestroy(graph_));
      graph_ = nullptr;
    }
    if (holds_pool_) {
      releasePool(device_, pool_);
      holds_pool_ = false;
    }
    captured_ = false;
  }

  c10::MempoolId_t pool() const override { return pool_; }

  void enable_debug_mode() override { debug_ = true; }

  // A DOT file with the graph's operations in order.
  void debug_dump(const std::string& path) override {
    TORCH_CHECK(debug_, "debug_dump() needs enable_debug_mode() first");
    TORCH_CHECK(graph_ != nullptr,
                "debug_dump() needs the captured graph: construct the graph "
                "with keep_graph=True");
    std::size_t count = 0;
    ACCGEN_CHECK(accGraphGetNodeCount(graph_, &count));
    std::ofstream out(path);
    TORCH_CHECK(out.good(), "debug_dump: cannot write ", path);
    out << "digraph " << kDeviceName << "_graph {\n";
    for (std::size_t i = 0; i < count; ++i) {
      out << "  n" << i << " [label=\"operation " << i << "\"];\n";
      if (i > 0) {
        out << "  n" << i - 1 << " -> n" << i << ";\n";
      }
    }
    out << "}\n";
    TORCH_CHECK(out.good(), "debug_dump: cannot write ", path);
  }

 private:
  void endCapture() {
    endAllocateToPool(device_, capture_id_);
    g_captures.fetch_sub(1, std::memory_order_relaxed);
    capture_id_ = 0;
  }

  const bool keep_graph_;
  c10::DeviceIndex device_ = 0;
  accStream_t stream_ = nullptr;
  unsigned long long capture_id_ = 0;  // while capturing
  c10::MempoolId_t pool_{0, 0};
  bool holds_pool_ = false;
  bool captured_ = false;
  bool debug_ = false;
  accGraph_t graph_ = nullptr;
  accGraphExec_t exec_ = nullptr;
};

}  // namespace

bool graphCaptureInProgress() noexcept {
  return g_captures.load(std::memory_order_relaxed) != 0;
}

namespace detail {

void registerGraphs() {
  // The registry's key is the device type's name as torch spells it for
  // lookups (at::create_graph_impl), known only once PrivateUse1 is named.
  static const at::RegistererGraphImplRegistry registerer(
      c10::DeviceTypeName(kDeviceType, /*lower_case=*/false),
      at::GraphImplRegistry(),
      at::RegistererGraphImplRegistry::DefaultCreator<DeviceGraph>);
}

}  // namespace detail
}  // namespace accgen::runtime
