// Entry points for stream capture and graphs.
//
// Note [Graph replay]
// ~~~~~~~~~~~~~~~~~~~
// A capture records the work queued on its streams, in the order it was
// queued, as one list: the kernels (launched with accLaunchKernelOwned, whose
// data the graph keeps for every replay), copies and memsets, and event
// records. Streams that joined the capture add to the same list, so a replay
// runs their work in capture order: a valid order, since every dependency
// between them was a wait recorded before the work that needed it. A launch
// queues the whole list as one item on its stream (one hand-off for the
// whole graph; on an idle stream, small graphs run on the launching thread,
// as small work does), then records the captured events after it, so that a
// stream or the host waiting for one of them waits for the replay.
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "runtime.h"

using accgen::emulator::AllocationRef;
using accgen::emulator::Capture;
using accgen::emulator::Event;
using accgen::emulator::GraphNodes;
using accgen::emulator::guarded;
using accgen::emulator::kInlineWorkBytes;
using accgen::emulator::Runtime;
using accgen::emulator::Stream;
using accgen::emulator::Work;
using accgen::emulator::WorkKind;

struct accGraph_st {
  std::shared_ptr<const GraphNodes> nodes;
};

struct accGraphExec_st {
  std::shared_ptr<const GraphNodes> nodes;
  std::vector<std::shared_ptr<Event>> records;  // in capture order
  size_t bytes = 0;                             // of the allocations touched
  std::mutex mutex;
  // The last launch on each stream, waited for by accGraphExecDestroy.
  std::unordered_map<Stream*, std::pair<std::shared_ptr<Stream>, uint64_t>>
      launches;
};

namespace {

// Live graph handles. Never destroyed (Note [Runtime lifetime]).
struct Handles {
  std::mutex mutex;
  std::unordered_set<accGraph_t> graphs;
  std::unordered_set<accGraphExec_t> execs;
};

Handles& handles() {
  static auto* table = new Handles();
  return *table;
}

template <class Handle>
bool live(const std::unordered_set<Handle>& set, Handle handle) {
  return handle != nullptr && set.count(handle) != 0;
}

// Takes a live handle out of its table, for destruction; false for an
// unknown one.
template <class Handle>
bool remove(std::unordered_set<Handle>& set, Handle handle) {
  Handles& table = handles();
  const std::lock_guard<std::mutex> lock(table.mutex);
  return handle != nullptr && set.erase(handle) == 1;
}

}  // namespace

extern "C" {

accError_t accStreamBeginCapture(accStream_t stream,
                                 accStreamCaptureMode mode) {
  if (mode != accStreamCaptureModeGlobal &&
      mode != accStreamCaptureModeThreadLocal &&
      mode != accStreamCaptureModeRelaxed) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    if (!rt.config().graphs) {
      return accErrorNotSupported;  // ACCGEN_EMU_GRAPHS=0
    }
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    // As in CUDA, the default stream, which other streams' work orders
    // against, cannot capture.
    if (target->isDefault() || target->capture() != nullptr) {
      return accErrorStreamCaptureUnsupported;
    }
    auto capture = std::make_shared<Capture>(target->device(), mode, target);
    if (capture->global()) {
      rt.device(target->device())
          .global_captures.fetch_add(1, std::memory_order_acq_rel);
    }
    target->setCapture(std::move(capture));
    return accSuccess;
  });
}

accError_t accStreamEndCapture(accStream_t stream, accGraph_t* graph) {
  if (graph == nullptr) {
    return accErrorInvalidValue;
  }
  *graph = nullptr;
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    std::shared_ptr<Capture> capture = target->capture();
    if (capture == nullptr || capture->origin() != target.get()) {
      return accErrorInvalidValue;  // not the stream that began it
    }
    if (capture->global()) {
      rt.device(capture->device())
          .global_captures.fetch_sub(1, std::memory_order_acq_rel);
    }
    GraphNodes nodes;
    if (accError_t e = capture->finish(nodes); e != accSuccess) {
      return e;
    }
    auto made = std::make_unique<accGraph_st>();
    made->nodes = std::make_shared<const GraphNodes>(std::move(nodes));
    Handles& table = handles();
    const std::lock_guard<std::mutex> lock(table.mutex);
    table.graphs.insert(made.get());
    *graph = made.release();
    return accSuccess;
  });
}

accError_t accStreamGetCaptureInfo(accStream_t stream,
                                   accStreamCaptureStatus* status,
                                   unsigned long long* id) {
  if (status == nullptr) {
    return accErrorInvalidValue;
  }
  return guarded([&](Runtime& rt) {
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    std::shared_ptr<Capture> capture = target->capture();
    *status =
        capture != nullptr ? capture->status() : accStreamCaptureStatusNone;
    if (id != nullptr) {
      *id = capture != nullptr ? capture->id() : 0;
    }
    return accSuccess;
  });
}

accError_t accGraphGetNodeCount(accGraph_t graph, size_t* count) {
  if (count == nullptr) {
    return accErrorInvalidValue;
  }
  Handles& table = handles();
  const std::lock_guard<std::mutex> lock(table.mutex);
  if (!live(table.graphs, graph)) {
    return accErrorInvalidHandle;
  }
  *count = graph->nodes->size();
  return accSuccess;
}

accError_t accGraphDestroy(accGraph_t graph) {
  if (!remove(handles().graphs, graph)) {
    return accErrorInvalidHandle;
  }
  delete graph;  // instantiated graphs share the nodes
  return accSuccess;
}

accError_t accGraphInstantiate(accGraphExec_t* exec, accGraph_t graph) {
  if (exec == nullptr) {
    return accErrorInvalidValue;
  }
  *exec = nullptr;
  return guarded([&](Runtime&) {
    Handles& table = handles();
    const std::lock_guard<std::mutex> lock(table.mutex);
    if (!live(table.graphs, graph)) {
      return accErrorInvalidHandle;
    }
    auto made = std::make_unique<accGraphExec_st>();
    made->nodes = graph->nodes;
    std::unordered_set<const void*> seen;
    for (const Work& node : *made->nodes) {
      if (node.kind == WorkKind::kRecord) {
        made->records.push_back(node.event);
      }
      for (const AllocationRef& allocation : node.allocations) {
        if (seen.insert(allocation.get()).second) {
          made->bytes += allocation->size();
        }
      }
    }
    table.execs.insert(made.get());
    *exec = made.release();
    return accSuccess;
  });
}

accError_t accGraphLaunch(accGraphExec_t exec, accStream_t stream) {
  return guarded([&](Runtime& rt) {
    {
      Handles& table = handles();
      const std::lock_guard<std::mutex> lock(table.mutex);
      if (!live(table.execs, exec)) {
        return accErrorInvalidHandle;
      }
    }
    std::shared_ptr<Stream> target = rt.findStream(stream);
    if (target == nullptr) {
      return accErrorInvalidHandle;
    }
    if (target->capture() != nullptr) {
      return refuseIfCapturing(*target);  // no graphs inside graphs
    }
    Work work;
    work.kind = WorkKind::kGraph;
    work.graph = exec->nodes;
    uint64_t seq = 0;
    accError_t error = accSuccess;
    if (exec->bytes <= kInlineWorkBytes && target->idle()) {
      error = target->submitAndRun(std::move(work));
      seq = target->submitted();
    } else {
      error = target->submit(std::move(work), seq);
    }
    if (error != accSuccess) {
      return error;
    }
    {
      const std::lock_guard<std::mutex> lock(exec->mutex);
      exec->launches[target.get()] = {target, seq};
    }
    for (const std::shared_ptr<Event>& event : exec->records) {
      if (accError_t e = event->record(target); e != accSuccess) {
        return e;
      }
    }
    return accSuccess;
  });
}

accError_t accGraphExecDestroy(accGraphExec_t exec) {
  if (!remove(handles().execs, exec)) {
    return accErrorInvalidHandle;
  }
  for (auto& [key, launch] : exec->launches) {
    launch.first->waitFor(launch.second);
  }
  delete exec;
  return accSuccess;
}

}  // extern "C"
