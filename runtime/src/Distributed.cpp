// The device's c10d process group: torch.distributed on device tensors.
//
// Note [Collectives on a communication stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every collective of a group runs on one communication stream per device,
// as NCCL's process group does on CUDA:
//  1. the communication stream waits for the work already queued on the
//     caller's current stream (an event), so the collective sees what the
//     caller wrote;
//  2. on the communication stream, the runtime prepares what the collective
//     interface takes (contiguous buffers, the PREMUL_SUM scaling, complex
//     numbers as pairs of reals), queues the collective
//     (accgen/collectives.h), then copies results back where the caller's
//     tensors are not contiguous;
//  3. an end event is recorded there. Work::wait() makes the caller's
//     current stream wait for it and returns at once; the Work's future
//     completes (with the device tensors) once the collective ran, from
//     the group's completion thread, which also drops the tensors the
//     collective used, so the allocator cannot hand their memory out while
//     it is being read or written.
// The collective interface reports a failure (a peer that died, a timeout,
// ranks that disagree) as the communicator's asynchronous error. The
// completion thread turns it into the error of that Work's future and of
// every later one; the group is then broken, and each later call on it
// raises the same torch.distributed.DistBackendError.
#include "accgen/runtime/Distributed.h"

#include <accgen/collectives.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "accgen/runtime/Config.h"
#include "accgen/runtime/Driver.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime {
namespace {

using c10d::OpType;

/// An event of the runtime's own, destroyed with its last reference.
struct EventHandle {
  accEvent_t event = nullptr;
  EventHandle() = default;
  EventHandle(const EventHandle&) = delete;
  EventHandle& operator=(const EventHandle&) = delete;
  ~EventHandle() {
    if (event != nullptr) {
      (void)accEventDestroy(event);
    }
  }
};

std::shared_ptr<EventHandle> recordEvent(accStream_t stream) {
  auto handle = std::make_shared<EventHandle>();
  ACCGEN_CHECK(accEventCreateWithFlags(&handle->event, accEventDisableTiming));
  ACCGEN_CHECK(accEventRecord(handle->event, stream));
  return handle;
}

std::exception_ptr distributedError(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

/// <PREFIX>_DIST_BLOCKING_WAIT=1: Work::wait() also waits on the host for
/// the collective and raises its error there, as a debugging aid.
bool blockingWait() {
  static const bool blocking = [] {
    const std::string name = std::string(kEnvPrefix) + "_DIST_BLOCKING_WAIT";
    const char* value = std::getenv(name.c_str());
    return value != nullptr && std::string(value) == "1";
  }();
  return blocking;
}

accDataType_t collectiveType(c10::ScalarType type, const char* op) {
  switch (type) {
    case c10::kChar:
      return accInt8;
    case c10::kByte:
    case c10::kBool:
      return accUint8;
    case c10::kInt:
      return accInt32;
    case c10::kLong:
      return accInt64;
    case c10::kHalf:
      return accFloat16;
    case c10::kBFloat16:
      return accBFloat16;
    case c10::kFloat:
      return accFloat32;
    case c10::kDouble:
      return accFloat64;
    default:
      break;
  }
  TORCH_CHECK_TYPE(false, distributedBackendName(), " ", op,
                   ": tensors of dtype ", type, " are not supported");
}

/// The interface's reduction for `op` on tensors of `type`; PREMUL_SUM is
/// a SUM after the scaling (scaleForPreMulSum). Booleans reduce as bytes:
/// SUM is a logical or, PRODUCT a logical and.
accRedOp_t collectiveOp(const c10d::ReduceOp& op, c10::ScalarType type,
                        const char* name) {
  const bool boolean = type == c10::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PREMUL_SUM:
      return boolean ? accMax : accSum;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK_VALUE(!boolean, distributedBackendName(), " ", name,
                        ": ReduceOp.AVG does not apply to bool tensors");
      return accAvg;
    case c10d::ReduceOp::PRODUCT:
      return boolean ? accMin : accProd;
    case c10d::ReduceOp::MIN:
      return accMin;
    case c10d::ReduceOp::MAX:
      return accMax;
    default:
      break;
  }
  TORCH_CHECK_VALUE(false, distributedBackendName(), " ", name, ": ReduceOp ",
                    static_cast<int>(op.op_),
                    " is not supported (SUM, AVG, PRODUCT, MIN, MAX and "
                    "PREMUL_SUM are)");
}

/// A tensor as the interface takes it: complex numbers as pairs of reals.
at::Tensor asReal(const at::Tensor& tensor) {
  return tensor.is_complex() ? at::view_as_real(tensor) : tensor;
}

/// The buffer a collective reads: `tensor` when contiguous, else a
/// contiguous copy (made on the current stream, the communication stream).
at::Tensor readable(const at::Tensor& tensor) {
  return asReal(tensor).contiguous();
}

/// Checks the reduction's complex support and scales for PREMUL_SUM: the
/// buffer to reduce, a scaled copy where needed.
at::Tensor reducible(const at::Tensor& tensor, const c10d::ReduceOp& op,
                     const char* name) {
  TORCH_CHECK_VALUE(
      !tensor.is_complex() || c10d::isComplexViewAsRealAllowed(op),
      distributedBackendName(), " ", name,
      ": this reduction does not apply to complex tensors");
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return readable(tensor);
  }
  const auto* factor =
      dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(factor != nullptr, distributedBackendName(), " ", name,
                    ": PREMUL_SUM without its factor");
  at::Tensor scaled = factor->tensor_factor.defined()
                          ? tensor * factor->tensor_factor
                          : tensor * factor->double_factor;
  return asReal(scaled).contiguous();
}

std::size_t count(const at::Tensor& tensor) {
  return static_cast<std::size_t>(tensor.numel());
}

// ------------------------------------------------------------------- work

class DeviceWork final : public c10d::Work {
 public:
  DeviceWork(int rank, OpType type, const char* title, c10::DeviceIndex device,
             std::shared_ptr<EventHandle> end, std::vector<at::Tensor> outputs,
             c10::intrusive_ptr<c10::ivalue::Future> future)
      : Work(rank, type, title),
        device_(device),
        end_(std::move(end)),
        outputs_(std::move(outputs)),
        future_(std::move(future)) {}

  bool isCompleted() override { return future_->completed(); }

  bool isSuccess() const override {
    return future_->completed() && !future_->hasError();
  }

  std::exception_ptr exception() const override {
    return future_->completed() && future_->hasError()
               ? future_->exception_ptr()
               : nullptr;
  }

  bool wait(std::chrono::milliseconds /*timeout*/) override {
    blockCurrentStream();
    if (blockingWait()) {
      future_->wait();
    }
    if (future_->completed() && future_->hasError()) {
      std::rethrow_exception(future_->exception_ptr());
    }
    return true;
  }

  void synchronize() override { (void)wait(std::chrono::milliseconds(0)); }

  void blockCurrentStream() override {
    ACCGEN_CHECK(
        accStreamWaitEvent(currentNativeStream(device_), end_->event, 0));
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    return future_;
  }

  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  c10::DeviceIndex device_;
  std::shared_ptr<EventHandle> end_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// ---------------------------------------------------------------- backend

/// The bootstrap callbacks of accCommBootstrap over the group's store.
struct Bootstrap {
  c10::intrusive_ptr<c10d::Store> store;
  HostGroupFactory host_group_factory;
  std::map<int, c10::intrusive_ptr<c10d::Backend>> host_groups;

  static accError_t set(void* context, const char* key, const void* data,
                        size_t size) {
    try {
      const auto* bytes = static_cast<const uint8_t*>(data);
      static_cast<Bootstrap*>(context)->store->set(
          std::string("comm/") + key,
          std::vector<uint8_t>(bytes, bytes + size));
      return accSuccess;
    } catch (const std::exception&) {
      return accErrorInvalidValue;
    }
  }

  static accError_t get(void* context, const char* key, void* data,
                        size_t* size) {
    try {
      const std::vector<uint8_t> value =
          static_cast<Bootstrap*>(context)->store->get(std::string("comm/") +
                                                       key);
      if (value.size() > *size) {
        return accErrorInvalidValue;
      }
      std::copy(value.begin(), value.end(), static_cast<uint8_t*>(data));
      *size = value.size();
      return accSuccess;
    } catch (const std::exception&) {
      return accErrorInvalidValue;
    }
  }

  // The factory's exception, rethrown once the communicator's creation
  // returned: it must not cross the C interface.
  std::exception_ptr host_group_error;

  static void* hostGroup(void* context, int index) {
    auto& self = *static_cast<Bootstrap*>(context);
    auto& group = self.host_groups[index];
    if (!group && self.host_group_factory && !self.host_group_error) {
      try {
        group = self.host_group_factory(index);
      } catch (...) {
        self.host_group_error = std::current_exception();
      }
    }
    return group.get();
  }
};

/// A collective queued on the communication stream, until it completed.
struct Pending {
  std::string name;
  c10::Stream stream;
  std::shared_ptr<EventHandle> end;
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> held;
  c10::intrusive_ptr<c10::ivalue::Future> future;
};

/// What a group shares with its completion thread, which may outlive the
/// group: a future's callback may drop the group's last reference.
struct Completion {
  std::mutex mutex;
  std::condition_variable ready;
  std::condition_variable idle;
  std::deque<Pending> pending;
  bool completing = false;
  bool stopping = false;
  std::exception_ptr broken;  // the group's first failure
  accComm_t comm = nullptr;
  int rank = 0;

  Completion() = default;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion() {
    if (comm != nullptr) {
      (void)accCommDestroy(comm);
    }
  }
};

class DeviceBackend final : public c10d::Backend {
 public:
  DeviceBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                std::chrono::milliseconds timeout, HostGroupFactory host_group)
      : Backend(rank, size), device_(currentDevice()) {
    Bootstrap bootstrap{std::move(store), std::move(host_group), {}, {}};
    const accCommBootstrap callbacks{&bootstrap, &Bootstrap::set,
                                     &Bootstrap::get, &Bootstrap::hostGroup,
                                     timeout.count()};
    const accError_t created =
        accCommInitRank(&state_->comm, size, rank, device_, &callbacks);
    if (bootstrap.host_group_error) {
      std::rethrow_exception(bootstrap.host_group_error);
    }
    ACCGEN_CHECK(created);
    // The communicator holds what it needs of the host group; the factory
    // (a Python callable) is dropped here, in the creating call.
    host_groups_ = std::move(bootstrap.host_groups);
    state_->rank = rank;
    completion_ = std::thread([state = state_] { completeInOrder(state); });
  }

  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;

  ~DeviceBackend() override {
    {
      const std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
    }
    state_->ready.notify_all();
    if (completion_.get_id() == std::this_thread::get_id()) {
      // A future's callback dropped the group's last reference: the
      // completion thread goes on with the shared state alone and ends
      // when nothing is left (Completion).
      completion_.detach();
    } else {
      completion_.join();
    }
  }

  const std::string getBackendName() const override {
    return distributedBackendName();
  }

  /// Returns once every collective issued so far has completed and its
  /// future's callbacks ran.
  void drain() {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->idle.wait(
        lock, [&] { return state_->pending.empty() && !state_->completing; });
  }

  /// Makes `backend` known to drainAll().
  static void track(const c10::intrusive_ptr<DeviceBackend>& backend) {
    const std::lock_guard<std::mutex> lock(liveMutex());
    auto& backends = live();
    std::erase_if(backends, [](const auto& weak) { return weak.expired(); });
    backends.emplace_back(backend);
  }

  /// The groups alive now, held while the caller uses them.
  static std::vector<c10::intrusive_ptr<DeviceBackend>> liveBackends() {
    std::vector<c10::intrusive_ptr<DeviceBackend>> backends;
    {
      const std::lock_guard<std::mutex> lock(liveMutex());
      for (const auto& weak : live()) {
        if (auto backend = weak.lock()) {
          backends.push_back(std::move(backend));
        }
      }
    }
    return backends;
  }

  /// Whether a collective of this group is still to complete.
  bool pending() {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    return !state_->pending.empty() || state_->completing;
  }

  /// Whether any group has a collective still to complete.
  static bool anyPending() {
    const auto backends = liveBackends();
    return std::any_of(backends.begin(), backends.end(),
                       [](const auto& backend) { return backend->pending(); });
  }

  /// drain() for every group of the process (drainCollectives()).
  static void drainAll() {
    for (const auto& backend : liveBackends()) {
      backend->drain();
    }
  }

  // Coalescing: the collectives between start and end are queued as they
  // come, in order on the communication stream, so the last one's Work
  // stands for them all.
  bool supportsCoalescing() const override { return true; }

  void startCoalescing() override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    coalescing_ = true;
    last_coalesced_.reset();
  }

  c10::intrusive_ptr<c10d::Work> endCoalescing() override {
    c10::intrusive_ptr<c10d::Work> last;
    {
      const std::lock_guard<std::mutex> lock(state_->mutex);
      coalescing_ = false;
      last = std::move(last_coalesced_);
    }
    if (!last) {  // nothing was issued: a Work that is already done
      const c10::DeviceIndex device = currentDevice();
      auto future = c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()),
          std::vector<c10::Device>{c10::Device(kDeviceType, device)});
      future->markCompleted(c10::IValue(std::vector<at::Tensor>()));
      last = c10::make_intrusive<DeviceWork>(
          getRank(), OpType::COALESCED, "coalesced", device,
          recordEvent(currentNativeStream(device)), std::vector<at::Tensor>(),
          std::move(future));
    }
    return last;
  }

  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts) override {
    const at::Tensor& tensor = single(tensors, "broadcast");
    return collective(
        OpType::BROADCAST, "broadcast", tensor, tensors,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor buffer = readable(tensor);
          ACCGEN_CHECK(accBroadcast(
              buffer.data_ptr(), buffer.data_ptr(), count(buffer),
              collectiveType(buffer.scalar_type(), "broadcast"),
              static_cast<int>(opts.rootRank), state_->comm, stream));
          copyBack(tensor, buffer, held);
        });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts) override {
    const at::Tensor& tensor = single(tensors, "allreduce");
    return collective(OpType::ALLREDUCE, "allreduce", tensor, tensors,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        allReduceInto(tensor, opts.reduceOp, stream, held);
                      });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts) override {
    TORCH_CHECK_VALUE(!tensors.empty(), distributedBackendName(),
                      " allreduce_coalesced: no tensors");
    return collective(OpType::ALLREDUCE_COALESCED, "allreduce_coalesced",
                      tensors.front(), tensors,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        for (const at::Tensor& tensor : tensors) {
                          allReduceInto(tensor, opts.reduceOp, stream, held);
                        }
                      });
  }

  c10::intrusive_ptr<c10d::Work> reduce(
      std::vector<at::Tensor>& tensors,
      const c10d::ReduceOptions& opts) override {
    // All ranks reduce; only the root keeps the result, as c10d specifies.
    const at::Tensor& tensor = single(tensors, "reduce");
    return collective(OpType::REDUCE, "reduce", tensor, tensors,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        if (getRank() == opts.rootRank) {
                          allReduceInto(tensor, opts.reduceOp, stream, held);
                        } else {
                          allReduceInto(tensor.clone(), opts.reduceOp, stream,
                                        held);
                        }
                      });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& /*opts*/) override {
    std::vector<at::Tensor> outputs{output};
    return collective(OpType::_ALLGATHER_BASE, "_allgather_base", input,
                      outputs,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        allGatherInto(output, input, stream, held);
                      });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& /*opts*/) override {
    checkPairs(outputs, inputs, "allgather_into_tensor_coalesced");
    return collective(OpType::COALESCED, "allgather_into_tensor_coalesced",
                      inputs.front(), outputs,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        for (std::size_t i = 0; i < inputs.size(); ++i) {
                          allGatherInto(outputs[i], inputs[i], stream, held);
                        }
                      });
  }

  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& /*opts*/) override {
    const at::Tensor& input = single(inputs, "allgather");
    TORCH_CHECK_VALUE(
        outputs.size() == 1 &&
            outputs.front().size() == static_cast<std::size_t>(getSize()),
        distributedBackendName(), " allgather: expected one list of ",
        getSize(), " output tensors");
    std::vector<at::Tensor>& list = outputs.front();
    return collective(OpType::ALLGATHER, "allgather", input, list,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        allGatherIntoList(list, input, stream, held, true);
                      });
  }

  c10::intrusive_ptr<c10d::Work> gather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts) override {
    // An all-gather of which only the root keeps the result.
    const at::Tensor& input = single(inputs, "gather");
    const bool root = getRank() == opts.rootRank;
    TORCH_CHECK_VALUE(
        root ? outputs.size() == 1 &&
                   outputs.front().size() == static_cast<std::size_t>(getSize())
             : outputs.empty() || outputs.front().empty(),
        distributedBackendName(), " gather: the root takes one list of ",
        getSize(), " output tensors, the other ranks none");
    std::vector<at::Tensor> list = root ? outputs.front() : inputs;
    return collective(OpType::GATHER, "gather", input, list,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        allGatherIntoList(list, input, stream, held, root);
                      });
  }

#if ACCGEN_TORCH_AT_LEAST(2, 14)
  // torch 2.14 added gather_single (torch.distributed.gather_single, with
  // gather_into_tensor its deprecated alias): every rank's tensor into one
  // flat buffer of the root. Backend's default of either name forwards to
  // the other and ends in "does not support". 2.13 has neither.
  c10::intrusive_ptr<c10d::Work> gather_single(
      at::Tensor& output, at::Tensor& input,
      const c10d::GatherOptions& opts) override {
    // An all-gather of which only the root keeps the result; the other
    // ranks pass an empty placeholder.
    const bool root = getRank() == opts.rootRank;
    std::vector<at::Tensor> outputs{output};
    return collective(OpType::GATHER, "gather_single", input, outputs,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        at::Tensor target = output;
                        if (!root) {
                          target = at::empty({getSize() * input.numel()},
                                             input.options());
                          held.push_back(target);
                        }
                        allGatherInto(target, input, stream, held);
                      });
  }
#endif

  c10::intrusive_ptr<c10d::Work> scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts) override {
    // The root's inputs, stacked and broadcast; each rank keeps its part.
    const at::Tensor& output = single(outputs, "scatter");
    const bool root = getRank() == opts.rootRank;
    TORCH_CHECK_VALUE(
        root ? inputs.size() == 1 &&
                   inputs.front().size() == static_cast<std::size_t>(getSize())
             : inputs.empty() || inputs.front().empty(),
        distributedBackendName(), " scatter: the root takes one list of ",
        getSize(), " input tensors, the other ranks none");
    return collective(
        OpType::SCATTER, "scatter", output, outputs,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor stacked =
              root ? at::cat(flatten(inputs.front()))
                   : at::empty({getSize() * output.numel()}, output.options());
          at::Tensor buffer = asReal(stacked);
          ACCGEN_CHECK(accBroadcast(
              buffer.data_ptr(), buffer.data_ptr(), count(buffer),
              collectiveType(buffer.scalar_type(), "scatter"),
              static_cast<int>(opts.rootRank), state_->comm, stream));
          output.copy_(
              stacked.view({getSize(), -1})[getRank()].view_as(output));
          held.push_back(stacked);
        });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts) override {
    std::vector<at::Tensor> outputs{output};
    return collective(
        OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", input, outputs,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          reduceScatterInto(output, input, opts.reduceOp, stream, held);
        });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    checkPairs(outputs, inputs, "reduce_scatter_tensor_coalesced");
    return collective(OpType::COALESCED, "reduce_scatter_tensor_coalesced",
                      inputs.front(), outputs,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        for (std::size_t i = 0; i < inputs.size(); ++i) {
                          reduceScatterInto(outputs[i], inputs[i],
                                            opts.reduceOp, stream, held);
                        }
                      });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    const at::Tensor& output = single(outputs, "reduce_scatter");
    TORCH_CHECK_VALUE(
        inputs.size() == 1 &&
            inputs.front().size() == static_cast<std::size_t>(getSize()),
        distributedBackendName(), " reduce_scatter: expected one list of ",
        getSize(), " input tensors");
    return collective(OpType::REDUCE_SCATTER, "reduce_scatter", output, outputs,
                      [&](accStream_t stream, std::vector<at::Tensor>& held) {
                        at::Tensor stacked = at::cat(flatten(inputs.front()));
                        reduceScatterInto(output, stacked, opts.reduceOp,
                                          stream, held);
                      });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input,
      std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
      const c10d::AllToAllOptions& /*opts*/) override {
    std::vector<at::Tensor> outputs{output};
    return collective(
        OpType::ALLTOALL_BASE, "alltoall_base", input, outputs,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor send = readable(input);
          at::Tensor receive = asReal(output).contiguous();
          const auto layout = [&](const at::Tensor& tensor,
                                  const std::vector<int64_t>& splits,
                                  std::vector<std::size_t>& counts,
                                  std::vector<std::size_t>& displs) {
            const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
            const int64_t row = rows == 0 ? 0 : tensor.numel() / rows;
            std::size_t offset = 0;
            for (int r = 0; r < getSize(); ++r) {
              const int64_t n = splits.empty()
                                    ? rows / getSize()
                                    : splits[static_cast<std::size_t>(r)];
              counts.push_back(static_cast<std::size_t>(n * row));
              displs.push_back(offset);
              offset += counts.back();
            }
            TORCH_CHECK_VALUE(offset == count(tensor), distributedBackendName(),
                              " alltoall_base: the split sizes do not cover "
                              "the tensor's ",
                              rows, " rows");
          };
          std::vector<std::size_t> send_counts;
          std::vector<std::size_t> send_displs;
          std::vector<std::size_t> recv_counts;
          std::vector<std::size_t> recv_displs;
          layout(send, input_splits, send_counts, send_displs);
          layout(receive, output_splits, recv_counts, recv_displs);
          ACCGEN_CHECK(accAllToAllv(
              send.data_ptr(), send_counts.data(), send_displs.data(),
              receive.data_ptr(), recv_counts.data(), recv_displs.data(),
              collectiveType(send.scalar_type(), "alltoall_base"), state_->comm,
              stream));
          held.push_back(send);
          copyBack(output, receive, held);
        });
  }

  // torch.distributed.all_to_all: list r of each rank goes to rank r, in
  // any shapes (of one dtype). The inputs travel in one buffer, as
  // all_to_all_single's do, and the received parts are copied out.
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& /*opts*/) override {
    const auto world = static_cast<std::size_t>(getSize());
    TORCH_CHECK_VALUE(outputs.size() == world && inputs.size() == world,
                      distributedBackendName(), " alltoall: expected ", world,
                      " input and ", world, " output tensors, got ",
                      inputs.size(), " and ", outputs.size());
    for (const std::vector<at::Tensor>* list : {&inputs, &outputs}) {
      for (const at::Tensor& t : *list) {
        TORCH_CHECK_VALUE(t.scalar_type() == inputs.front().scalar_type(),
                          distributedBackendName(),
                          " alltoall: every tensor must have one dtype, got ",
                          inputs.front().scalar_type(), " and ",
                          t.scalar_type());
      }
    }
    return collective(
        OpType::ALLTOALL, "alltoall", inputs.front(), outputs,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor send = asReal(at::cat(flatten(inputs))).contiguous();
          const auto parts = [](const std::vector<at::Tensor>& list,
                                std::vector<std::size_t>& counts,
                                std::vector<std::size_t>& displs) {
            std::size_t offset = 0;
            for (const at::Tensor& t : list) {
              // Complex tensors travel as pairs of reals.
              counts.push_back(count(t) * (t.is_complex() ? 2 : 1));
              displs.push_back(offset);
              offset += counts.back();
            }
            return offset;
          };
          std::vector<std::size_t> send_counts;
          std::vector<std::size_t> send_displs;
          std::vector<std::size_t> recv_counts;
          std::vector<std::size_t> recv_displs;
          parts(inputs, send_counts, send_displs);
          const std::size_t total = parts(outputs, recv_counts, recv_displs);
          at::Tensor receive =
              at::empty({static_cast<int64_t>(total)}, send.options());
          ACCGEN_CHECK(accAllToAllv(
              send.data_ptr(), send_counts.data(), send_displs.data(),
              receive.data_ptr(), recv_counts.data(), recv_displs.data(),
              collectiveType(send.scalar_type(), "alltoall"), state_->comm,
              stream));
          for (std::size_t r = 0; r < world; ++r) {
            at::Tensor part =
                receive.narrow(0, static_cast<int64_t>(recv_displs[r]),
                               static_cast<int64_t>(recv_counts[r]));
            if (outputs[r].is_complex()) {
              part = at::view_as_complex(part.view({-1, 2}));
            }
            outputs[r].copy_(part.view(outputs[r].sizes()));
          }
          held.push_back(send);
          held.push_back(receive);
        });
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors,
                                      int dst_rank, int /*tag*/) override {
    const at::Tensor& tensor = single(tensors, "send");
    return collective(
        OpType::SEND, "send", tensor, tensors,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor buffer = readable(tensor);
          ACCGEN_CHECK(accSend(buffer.data_ptr(), count(buffer),
                               collectiveType(buffer.scalar_type(), "send"),
                               dst_rank, state_->comm, stream));
          held.push_back(buffer);
        });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors,
                                      int src_rank, int /*tag*/) override {
    const at::Tensor& tensor = single(tensors, "recv");
    return collective(
        OpType::RECV, "recv", tensor, tensors,
        [&](accStream_t stream, std::vector<at::Tensor>& held) {
          at::Tensor buffer = asReal(tensor).contiguous();
          ACCGEN_CHECK(accRecv(buffer.data_ptr(), count(buffer),
                               collectiveType(buffer.scalar_type(), "recv"),
                               src_rank, state_->comm, stream));
          copyBack(tensor, buffer, held);
        });
  }

  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& /*opts*/) override {
    // An all-reduce of one element that the host waits for, as NCCL's
    // process group does.
    const c10::Device device(kDeviceType, device_);
    std::vector<at::Tensor> tensors{
        at::zeros({1}, at::TensorOptions().device(device).dtype(at::kFloat))};
    auto work = allreduce(tensors, c10d::AllreduceOptions());
    work->getFuture()->wait();
    if (work->exception()) {
      std::rethrow_exception(work->exception());
    }
    return work;
  }

 private:
  using Issue = std::function<void(accStream_t, std::vector<at::Tensor>& held)>;

  static const at::Tensor& single(const std::vector<at::Tensor>& tensors,
                                  const char* name) {
    TORCH_CHECK_VALUE(tensors.size() == 1, distributedBackendName(), " ", name,
                      ": expected one tensor, got ", tensors.size());
    return tensors.front();
  }

  static void checkPairs(const std::vector<at::Tensor>& outputs,
                         const std::vector<at::Tensor>& inputs,
                         const char* name) {
    TORCH_CHECK_VALUE(!inputs.empty() && outputs.size() == inputs.size(),
                      distributedBackendName(), " ", name,
                      ": expected as many outputs as inputs, got ",
                      outputs.size(), " and ", inputs.size());
  }

  static std::vector<at::Tensor> flatten(const std::vector<at::Tensor>& list) {
    std::vector<at::Tensor> flat;
    flat.reserve(list.size());
    for (const at::Tensor& tensor : list) {
      flat.push_back(tensor.reshape({-1}));
    }
    return flat;
  }

  /// Writes `buffer` back into `tensor` when the collective worked on a
  /// copy, after the collective on the communication stream.
  static void copyBack(const at::Tensor& tensor, const at::Tensor& buffer,
                       std::vector<at::Tensor>& held) {
    const at::Tensor target = asReal(tensor);
    if (buffer.data_ptr() != target.data_ptr() || !target.is_contiguous()) {
      target.copy_(buffer.view_as(target));
    }
    held.push_back(buffer);
  }

  void allReduceInto(const at::Tensor& tensor, const c10d::ReduceOp& op,
                     accStream_t stream, std::vector<at::Tensor>& held) {
    at::Tensor buffer = reducible(tensor, op, "allreduce");
    ACCGEN_CHECK(
        accAllReduce(buffer.data_ptr(), buffer.data_ptr(), count(buffer),
                     collectiveType(buffer.scalar_type(), "allreduce"),
                     collectiveOp(op, tensor.scalar_type(), "allreduce"),
                     state_->comm, stream));
    copyBack(tensor, buffer, held);
  }

  void allGatherInto(const at::Tensor& output, const at::Tensor& input,
                     accStream_t stream, std::vector<at::Tensor>& held) {
    TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize() &&
                          output.scalar_type() == input.scalar_type(),
                      distributedBackendName(),
                      " all_gather: the output must hold world size (",
                      getSize(), ") times the input's ", input.numel(),
                      " elements of its dtype; it holds ", output.numel(),
                      " of ", output.scalar_type());
    at::Tensor send = readable(input);
    at::Tensor receive = asReal(output).contiguous();
    ACCGEN_CHECK(accAllGather(send.data_ptr(), receive.data_ptr(), count(send),
                              collectiveType(send.scalar_type(), "all_gather"),
                              state_->comm, stream));
    held.push_back(send);
    copyBack(output, receive, held);
  }

  /// An all-gather of `input`, one row a rank, copied into `list` when
  /// `keep` (gather keeps it on the root only).
  void allGatherIntoList(const std::vector<at::Tensor>& list,
                         const at::Tensor& input, accStream_t stream,
                         std::vector<at::Tensor>& held, bool keep) {
    at::Tensor gathered =
        at::empty({getSize(), input.numel()}, input.options());
    allGatherInto(gathered, input, stream, held);
    if (!keep) {
      return;
    }
    for (std::size_t r = 0; r < list.size(); ++r) {
      list[r].copy_(gathered[static_cast<int64_t>(r)].view_as(list[r]));
    }
  }

  void reduceScatterInto(const at::Tensor& output, const at::Tensor& input,
                         const c10d::ReduceOp& op, accStream_t stream,
                         std::vector<at::Tensor>& held) {
    TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize() &&
                          output.scalar_type() == input.scalar_type(),
                      distributedBackendName(),
                      " reduce_scatter: the input must hold world size (",
                      getSize(), ") times the output's ", output.numel(),
                      " elements of its dtype; it holds ", input.numel(),
                      " of ", input.scalar_type());
    at::Tensor send = reducible(input, op, "reduce_scatter");
    at::Tensor receive = asReal(output).contiguous();
    ACCGEN_CHECK(accReduceScatter(
        send.data_ptr(), receive.data_ptr(), count(receive),
        collectiveType(send.scalar_type(), "reduce_scatter"),
        collectiveOp(op, input.scalar_type(), "reduce_scatter"), state_->comm,
        stream));
    held.push_back(send);
    copyBack(output, receive, held);
  }

  void throwIfBroken() {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->broken) {
      std::rethrow_exception(state_->broken);
    }
  }

  c10::Stream commStream(c10::DeviceIndex device) {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    auto found = streams_.find(device);
    if (found == streams_.end()) {
      found = streams_.emplace(device, getStreamFromPool(device, -1)).first;
    }
    return found->second;
  }

  /// Note [Collectives on a communication stream].
  c10::intrusive_ptr<c10d::Work> collective(
      OpType type, const char* name, const at::Tensor& first,
      const std::vector<at::Tensor>& outputs, const Issue& issue) {
    throwIfBroken();
    TORCH_CHECK_VALUE(
        first.device().type() == kDeviceType, distributedBackendName(), " ",
        name, ": expected tensors on ", kDeviceName, ", got ", first.device());
    const c10::DeviceIndex device = first.device().index();
    // Note [Device misuse]: no silent mixing; every output on the device of
    // the input, as NCCL and Gloo on CUDA tensors require.
    for (const at::Tensor& t : outputs) {
      TORCH_CHECK_VALUE(!t.defined() || t.device() == first.device(),
                        distributedBackendName(), " ", name,
                        ": expected tensors on ", first.device(), ", got ",
                        t.device());
    }
    const c10::Stream comm = commStream(device);
    const accStream_t native = nativeStream(comm);
    {
      const auto ready = recordEvent(currentNativeStream(device));
      ACCGEN_CHECK(accStreamWaitEvent(native, ready->event, 0));
    }
    std::vector<at::Tensor> held(outputs.begin(), outputs.end());
    held.push_back(first);
    {
      const c10::StreamGuard on_comm(comm);
      issue(native, held);
    }
    auto end = recordEvent(native);
    auto future = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()),
        std::vector<c10::Device>{c10::Device(kDeviceType, device)});
    auto work = c10::make_intrusive<DeviceWork>(getRank(), type, name, device,
                                                end, outputs, future);
    {
      const std::lock_guard<std::mutex> lock(state_->mutex);
      state_->pending.push_back(Pending{name, comm, std::move(end), outputs,
                                        std::move(held), std::move(future)});
      if (coalescing_) {
        last_coalesced_ = work;
      }
    }
    state_->ready.notify_one();
    return work;
  }

  /// The completion thread: completes each collective's future, in issue
  /// order, once it ran (Note [Collectives on a communication stream]).
  static void completeInOrder(const std::shared_ptr<Completion>& state) {
    emulate::parkIfExitingThread();
    for (;;) {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->ready.wait(
          lock, [&] { return state->stopping || !state->pending.empty(); });
      if (state->pending.empty()) {
        return;  // stopping, and nothing left
      }
      std::optional<Pending> next(std::move(state->pending.front()));
      state->pending.pop_front();
      state->completing = true;
      lock.unlock();

      (void)accEventSynchronize(next->end->event);
      // Completing the future and dropping the tensors may take the GIL.
      emulate::parkIfExitingThread();
      accError_t failed = accSuccess;
      (void)accCommGetAsyncError(state->comm, &failed);
      lock.lock();
      if (failed != accSuccess && !state->broken) {
        state->broken = distributedError(c10::str(
            distributedBackendName(), " ", next->name, " on rank ", state->rank,
            " failed: ", accCommGetErrorMessage(state->comm),
            ". The process group cannot be used any more."));
      }
      const std::exception_ptr error = state->broken;
      lock.unlock();
      if (error) {
        next->future->setError(error);
      } else {
        const c10::StreamGuard on_comm(next->stream);
        next->future->markCompleted(c10::IValue(next->outputs));
      }
      next.reset();  // the tensors go here, not under the lock
      lock.lock();
      state->completing = false;
      lock.unlock();
      state->idle.notify_all();
    }
  }

  static std::mutex& liveMutex() {
    static std::mutex mutex;
    return mutex;
  }

  static std::vector<c10::weak_intrusive_ptr<DeviceBackend>>& live() {
    static auto* backends =
        new std::vector<c10::weak_intrusive_ptr<DeviceBackend>>();
    return *backends;  // never destroyed: groups may outlive static teardown
  }

  c10::DeviceIndex device_;
  std::shared_ptr<Completion> state_ = std::make_shared<Completion>();
  std::map<int, c10::intrusive_ptr<c10d::Backend>> host_groups_;
  std::map<c10::DeviceIndex, c10::Stream> streams_;  // under state_->mutex
  bool coalescing_ = false;                          // under state_->mutex
  c10::intrusive_ptr<c10d::Work> last_coalesced_;    // under state_->mutex
  std::thread completion_;
};

}  // namespace

std::string distributedBackendName() {
  return std::string(kDeviceName) + "ccl";
}

void drainCollectives() {
  DeviceBackend::drainAll();
}

bool collectivesPending() {
  return DeviceBackend::anyPending();
}

c10::intrusive_ptr<c10d::Backend> makeDistributedBackend(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size,
    std::chrono::milliseconds timeout, HostGroupFactory host_group) {
  auto backend = c10::make_intrusive<DeviceBackend>(
      std::move(store), rank, size, timeout, std::move(host_group));
  DeviceBackend::track(backend);
  return backend;
}

}  // namespace accgen::runtime
