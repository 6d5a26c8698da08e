// The one algorithm of the emulation engine (Note [How an emulated operator
// runs] in Rule.cpp), over either argument representation, and the shape
// cache it keeps per operator.
#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>

#include "../Internal.h"
#include "Engine.h"
#include "accgen/runtime/CpuGenerator.h"

namespace accgen::runtime::emulate::detail {
namespace {

// While a random CPU kernel without a generator argument runs for the
// device, the CPU default generator carries the state of the device's
// default generator, which gets the advanced state back: seeding through
// torch.<device> drives it (Note [Device generators on CPU kernels]). The
// CPU default generator is not locked for the call, since the kernel locks
// it; CPU random calls on other threads meanwhile see the device's state.
class DefaultGeneratorSwap {
 public:
  explicit DefaultGeneratorSwap(c10::DeviceIndex device)
      : scope_(std::nullopt, device),
        cpu_default_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(cpu_default_.mutex());
    saved_ = cpu_default_.get_state();
    cpu_default_.set_state(scope_.cpu().get_state());
  }
  ~DefaultGeneratorSwap() {
    std::lock_guard<std::mutex> lock(cpu_default_.mutex());
    at::Generator stand_in = scope_.cpu();
    stand_in.set_state(cpu_default_.get_state());
    cpu_default_.set_state(saved_);
  }
  DefaultGeneratorSwap(const DefaultGeneratorSwap&) = delete;
  DefaultGeneratorSwap& operator=(const DefaultGeneratorSwap&) = delete;

 private:
  CpuGeneratorScope scope_;
  at::Generator cpu_default_;
  at::Tensor saved_;
};

c10::DeviceIndex deviceOf(const Call& call) {
  const c10::DeviceIndex device = call.device();
  return device < 0 ? currentDevice() : device;
}

// The results' shapes, from the cache or the shape function; false when
// the shape function raised (rule 2), or, for a rule that learns its
// shapes, when none were learned for the call's key, which then goes to
// `learn` if the call is keyed (Note [Learned shapes]).
bool shapesOf(Rule& rule, Call& call, ShapeCache::Results& shapes,
              std::optional<ShapeCache::Key>* learn = nullptr) {
  ShapeCache::Key key;
  keyDefaults(key);
  const bool keyed = call.key(key);
  if (keyed && rule.shapes.lookup(key, shapes)) {
    return true;
  }
  if (rule.learns_shapes ||
      rule.learns_after_resize.load(std::memory_order_relaxed)) {
    if (keyed && learn != nullptr) {
      learn->emplace(std::move(key));
    }
    return false;
  }
  try {
    call.shapes(shapes);
  } catch (const std::exception&) {
    shapes.clear();
    return false;
  }
  if (keyed) {
    rule.shapes.insert(std::move(key), shapes);
  }
  return true;
}

// Whether the call may be queued (Note [Queued operators]): not a random
// operator, whose generator is swapped for the call.
bool queueable(const Rule& rule) {
  return !rule.random_without_generator && !rule.has_generator &&
         queueingAllowed();
}

// The CPU kernel of `op` on the call's host aliases, owning them, for a
// queue; the written aliases must keep their geometry.
std::unique_ptr<QueuedKernel> queuedKernel(const c10::OperatorHandle& op,
                                           Call& call,
                                           const AliasSet& aliases) {
  auto kernel = std::make_unique<QueuedKernel>(op);
  call.hostStack(kernel->stack);
  aliases.forEachWritten([&](const at::Tensor& host, const void* data) {
    kernel->written.push_back({host, data,
                               c10::SmallVector<int64_t, 5>(host.sizes()),
                               c10::SmallVector<int64_t, 5>(host.strides())});
  });
  return kernel;
}

// Runs `fn` at once on an idle stream when the work is small or may not be
// queued; false when it did not run it.
bool launchIfSmall(const AliasSet& aliases, bool may_queue,
                   c10::function_ref<void()> fn, bool fresh_results,
                   bool& resized) {
  if (may_queue && aliases.bytes() > kInlineBytes) {
    return false;
  }
  return launchIfIdle(aliases.device(), aliases.buffers(), fn, fresh_results,
                      resized);
}

// Rule 1: through the out= overload into results allocated on the device;
// false when the out= kernel resized one (rule 2).
bool runThroughOut(Rule& rule, Call& call, const ShapeCache::Results& shapes) {
  // The results are allocated on the call's device.
  const c10::DeviceIndex device = deviceOf(call);
  std::optional<c10::DeviceGuard> guard;
  if (device != currentDevice()) {
    guard.emplace(c10::Device(kDeviceType, device));
  }
  c10::SmallVector<at::Tensor, 2> results;
  for (const ShapeCache::Result& r : shapes) {
    results.push_back(allocateResult(r.sizes, r.strides, r.dtype));
  }
  AliasSet aliases;
  call.alias(aliases);
  c10::SmallVector<at::Tensor, 2> outs;
  for (const at::Tensor& r : results) {
    outs.push_back(aliases.alias(r, /*written=*/true, /*borrowed=*/true));
  }
  aliases.setDeviceIfUnset(device);
  // Queued once the out= kernel is known to keep the meta shapes, or in a
  // graph capture, which can only queue (the kernel's check of the written
  // geometry then reports a resize at the first replay).
  const bool may_queue =
      queueable(rule) && (rule.out_proven.load(std::memory_order_relaxed) ||
                          graphCaptureInProgress());
  const auto fn = [&] { call.runCpuOut(outs); };
  bool resized = false;
  if (!launchIfSmall(aliases, may_queue, fn, /*fresh_results=*/true, resized)) {
    if (may_queue) {
      auto kernel = queuedKernel(*rule.out, call, aliases);
      for (const at::Tensor& out : outs) {
        kernel->stack.emplace_back(out);
      }
      launchQueued(aliases.device(), aliases.buffers(), std::move(kernel));
      call.takeResults(results);
      return true;
    }
    resized = launchAndWait(aliases.device(), aliases.buffers(), fn,
                            /*fresh_results=*/true, &rule.op);
  }
  resized = aliases.reconcileWritten() || resized;
  if (resized) {
    rule.via_out.store(false, std::memory_order_relaxed);
    if (rule.may_learn) {
      // What the shape function gave is not what the kernel keeps.
      rule.shapes.clear();
      rule.learns_after_resize.store(true, std::memory_order_relaxed);
    }
    return false;
  }
  rule.out_proven.store(true, std::memory_order_relaxed);
  call.takeResults(results);
  return true;
}

// The results' shapes from the operator's Meta kernel, run on meta copies
// of the host aliases boxed on `stack`; false when it raised or returns
// something else than tensors. Slow (the Meta kernels of most operators are
// Python functions): for a capture only, which runs each operator once.
bool metaShapes(const Rule& rule, torch::jit::Stack stack,
                ShapeCache::Results& shapes) {
  const auto toMeta = [](const at::Tensor& t) {
    // A wrapped number stays a CPU scalar: it takes part in type promotion
    // as a Python number, and meta kernels accept CPU scalars beside meta
    // tensors.
    if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) {
      return t;
    }
    return metaTensor(t);
  };
  for (c10::IValue& value : stack) {
    if (value.isTensor()) {
      value = toMeta(value.toTensor());
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : value.toTensorList()) {
        list.push_back(toMeta(t));
      }
      value = list;
    } else if (value.isList()) {
      return false;  // lists of optional tensors: not needed so far
    }
  }
  try {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    rule.op.callBoxed(&stack);
  } catch (const std::exception&) {
    return false;
  }
  for (const c10::IValue& result : stack) {
    if (!result.isTensor()) {
      return false;
    }
    collectShapes(result.toTensor(), shapes);
  }
  return true;
}

// The results' shapes for a queued call: from the shape function, or,
// without one or when its shapes proved wrong (only in a graph capture),
// those learned for the call's key (Note [Learned shapes]), else the Meta
// kernel's; false when they are not known.
bool shapesToQueue(Rule& rule, Call& call, ShapeCache::Results& shapes) {
  const bool learns = rule.learns_shapes ||
                      rule.learns_after_resize.load(std::memory_order_relaxed);
  if (rule.has_shape_function && !learns) {
    return shapesOf(rule, call, shapes);
  }
  if (learns && shapesOf(rule, call, shapes)) {
    return true;
  }
  torch::jit::Stack host;
  call.hostStack(host);
  return metaShapes(rule, std::move(host), shapes);
}

// Rule 3, queued (Note [Queued operators]): an in-place operator whose
// shape function accepts the arguments and keeps the geometry of the ones
// it writes; false, with nothing queued, otherwise.
bool queueInPlace(Rule& rule, Call& call, AliasSet& aliases) {
  ShapeCache::Results shapes;
  if (!shapesToQueue(rule, call, shapes)) {
    return false;
  }
  // The written arguments keep their geometry, checked before anything is
  // boxed for the queue. An operator that returns nothing (_foreach_add_)
  // and has no shape function (in a graph capture) is queued unchecked:
  // the queued kernel's check of the written geometry reports a resize.
  if (rule.has_shape_function || !rule.op.schema().returns().empty()) {
    std::size_t written = 0;
    bool kept = true;
    aliases.forEachWritten([&](const at::Tensor& host, const void* /*data*/) {
      kept = kept && written < shapes.size() &&
             host.sizes() == c10::IntArrayRef(shapes[written].sizes) &&
             host.strides() == c10::IntArrayRef(shapes[written].strides) &&
             host.scalar_type() == shapes[written].dtype;
      ++written;
    });
    if (!kept || written != shapes.size()) {
      return false;
    }
  }
  launchQueued(aliases.device(), aliases.buffers(),
               queuedKernel(rule.op, call, aliases));
  call.takeArguments(rule.returned_argument);
  return true;
}

// Queues the functional CPU kernel of `rule` on the call's host aliases,
// its results copied into results allocated on the device with `shapes`.
void queueFunctional(Rule& rule, Call& call, AliasSet& aliases,
                     const ShapeCache::Results& shapes) {
  c10::SmallVector<at::Tensor, 2> results;
  c10::SmallVector<at::Tensor, 2> into;
  {
    const c10::DeviceGuard guard(c10::Device(kDeviceType, aliases.device()));
    for (const ShapeCache::Result& r : shapes) {
      results.push_back(allocateResult(r.sizes, r.strides, r.dtype));
      into.push_back(
          aliases.alias(results.back(), /*written=*/true, /*borrowed=*/true));
    }
  }
  auto kernel = queuedKernel(rule.op, call, aliases);
  kernel->results = std::move(into);
  launchQueued(aliases.device(), aliases.buffers(), std::move(kernel));
  call.takeResults(results);
}

// Rule 3 in a graph capture, which can only queue (Note [Device graphs]):
// a functional operator that rule 1 does not compute (its out= kernel
// resized its results, as mse_loss's does, or it has no C++ shape function,
// as mse_loss_backward) runs its own CPU kernel, whose results are copied
// into results allocated on the device with the shapes of its shape
// function, or else of its Meta kernel. False, with nothing queued, when
// it does not qualify.
bool queueFunctionalInCapture(Rule& rule, Call& call) {
  if (!rule.functional || !queueable(rule) || !graphCaptureInProgress()) {
    return false;
  }
  const c10::DeviceGuard guard(c10::Device(kDeviceType, deviceOf(call)));
  AliasSet aliases;
  call.alias(aliases);
  aliases.setDeviceIfUnset(guard.current_device().index());
  ShapeCache::Results shapes;
  if (!shapesToQueue(rule, call, shapes)) {
    return false;
  }
  queueFunctional(rule, call, aliases, shapes);
  return true;
}

// Rule 3, queued, for a functional operator without an out= overload that
// learned its shapes (Note [Learned shapes]): with the shapes learned for
// the call's key, its CPU kernel is queued as in a capture, and true; else
// false, with `learn` holding the key to learn under, when it has one.
bool queueLearned(Rule& rule, Call& call, AliasSet& aliases,
                  std::optional<ShapeCache::Key>& learn) {
  ShapeCache::Results shapes;
  if (!queueable(rule) || !shapesOf(rule, call, shapes, &learn)) {
    return false;
  }
  queueFunctional(rule, call, aliases, shapes);
  return true;
}

// Rule 3: the CPU kernel on host aliases. With `learn`, the shapes of its
// results, when all are fresh, are kept under that key for rule 1.
void runDirect(Rule& rule, Call& call,
               std::optional<ShapeCache::Key> learn = std::nullopt) {
  if (rule.results == Rule::Results::kOther &&
      queueFunctionalInCapture(rule, call)) {
    return;
  }
  AliasSet aliases;
  call.alias(aliases);
  aliases.setDeviceIfUnset(currentDevice());
  // Note [Kernel results in device memory]: new results of an operator
  // that keeps to the device are allocated there.
  const bool results_on_device =
      rule.results == Rule::Results::kOther && !rule.allows_cpu_tensors;
  std::optional<runtime::detail::KernelResultsPlace> place;
  if (results_on_device) {
    place = runtime::detail::KernelResultsPlace::of(aliases.device());
  }
  const auto fn = [&] {
    const runtime::detail::KernelAllocations results(
        place.has_value() ? &*place : nullptr);
    call.runCpu();
  };
  if (rule.results == Rule::Results::kViews) {
    // A view reads no data: it needs no place in the stream's order.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    fn();
  } else {
    const bool may_queue =
        queueable(rule) &&
        (rule.has_shape_function || graphCaptureInProgress()) &&
        rule.results == Rule::Results::kArguments;
    // Note [Learned shapes]: without an out= overload, a functional
    // operator may be queued once it learned its shapes.
    const bool may_queue_learned =
        rule.results == Rule::Results::kOther &&
        ((rule.learns_shapes && !rule.out.has_value()) ||
         rule.learns_after_resize.load(std::memory_order_relaxed));
    if (may_queue_learned && !learn.has_value() && queueable(rule)) {
      // Learned from a call that runs at once too, so that the next call
      // with its key may be queued.
      ShapeCache::Key key;
      ShapeCache::Results known;
      keyDefaults(key);
      if (call.key(key) && !rule.shapes.lookup(key, known)) {
        learn.emplace(std::move(key));
      }
    }
    bool resized = false;
    if (!launchIfSmall(aliases, may_queue || may_queue_learned, fn,
                       /*fresh_results=*/false, resized)) {
      if (may_queue && queueInPlace(rule, call, aliases)) {
        return;
      }
      if (may_queue_learned && queueLearned(rule, call, aliases, learn)) {
        return;
      }
      launchAndWait(aliases.device(), aliases.buffers(), fn,
                    /*fresh_results=*/false, &rule.op);
    }
  }
  aliases.reconcileWritten();
  if (learn.has_value()) {
    aliases.recordFreshShapes();
  }
  call.mapResults(aliases);
  aliases.launchCopies();
  if (const ShapeCache::Results* learned = aliases.freshResults()) {
    rule.shapes.insert(std::move(*learn), *learned);
  }
}

}  // namespace

void run(Rule& rule, Call& call) {
  raiseDeferredWarnings();
  // Note [Device misuse]: before a shape computation, which would report
  // meta tensors.
  if (!rule.allows_cpu_tensors) {
    call.checkSameDevice();
  }
  std::optional<DefaultGeneratorSwap> generator;
  if (rule.random_without_generator) {
    generator.emplace(deviceOf(call));
  }
  std::optional<ShapeCache::Key> learn;
  if (rule.via_out.load(std::memory_order_relaxed)) {
    ShapeCache::Results shapes;
    if (shapesOf(rule, call, shapes, &learn) &&
        runThroughOut(rule, call, shapes)) {
      return;
    }
  }
  runDirect(rule, call, std::move(learn));
}

void collectShapes(const at::Tensor& meta, ShapeCache::Results& out) {
  out.push_back({c10::SmallVector<int64_t, 5>(meta.sizes()),
                 c10::SmallVector<int64_t, 5>(meta.strides()),
                 meta.scalar_type()});
}

// --8<-- [start:learned-shapes]
// Note [Learned shapes]
// ~~~~~~~~~~~~~~~~~~~~~
// An operator without a C++ shape function (every operator the emulate
// fallback catches, and listed operators that are not structured, like
// native_batch_norm) learns its result shapes from its own CPU kernel: the
// first call with a key runs as rule 3, and when all its results were new
// tensors of the CPU kernel, their sizes, strides and dtypes are kept in the
// shape cache under the call's key. A later call with the same key runs as
// rule 1, through the out= overload into results allocated with those shapes,
// with no copy, and may be queued. An operator without a usable out= overload
// learns the same way from calls that do not run at once on an idle stream: a
// later such call is queued, its CPU kernel's results copied into results
// allocated on the device with the learned shapes (as in a graph capture,
// which uses the learned shapes too where it has them). The key holds
// everything a shape computation reads (Note [Shape cache]), so the shapes
// are those the CPU kernel gives; an operator whose shapes depend on more
// than that (random draws, a device argument, CPU tensors by design,
// data-dependent shapes, which carry dynamic_output_shape) learns nothing.
// An out= kernel that resizes a result all the same sends the operator to
// rule 3 for good (rule 2); its shape function's answers are dropped, and
// from then on it learns its shapes as an operator without one (mse_loss,
// whose shape function gives the elementwise shape that its out= kernel
// resizes to the reduction's).
// --8<-- [end:learned-shapes]

// --8<-- [start:shape-cache]
// Note [Shape cache]
// ~~~~~~~~~~~~~~~~~~
// A functional operator computed through its out= overload gets its results'
// sizes, strides and dtypes from a shape computation, which costs more than a
// small operator's kernel. That computation reads nothing but the arguments
// (a tensor's metadata, any other argument's value) and torch's default
// dtypes, so each operator keeps its answer for its last eight distinct calls
// (a ShapeCache's default size). The key holds the default dtypes and, for
// every argument, a tag and either the tensor's device type, dtype, flags
// (wrapped number, conjugate, negative), sizes, strides and storage offset, or
// the value itself. Calls with arguments of other kinds (lists of tensors,
// generators, complex numbers, symbolic integers) are not keyed.
// --8<-- [end:shape-cache]

bool ShapeCache::lookup(const Key& key, Results& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [known, results] : entries_) {
    if (known == key) {
      out = results;
      return true;
    }
  }
  return false;
}

void ShapeCache::insert(Key key, const Results& results) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() < entries_limit_) {
    entries_.emplace_back(std::move(key), results);
    return;
  }
  entries_[next_] = {std::move(key), results};
  next_ = (next_ + 1) % entries_limit_;
}

void ShapeCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  next_ = 0;
}

void keyDefaults(ShapeCache::Key& key) {
  key.push_back(static_cast<int64_t>(c10::get_default_dtype_as_scalartype()));
  key.push_back(static_cast<int64_t>(
      c10::typeMetaToScalarType(c10::get_default_complex_dtype())));
}

namespace {

// The key of an optional argument: `none_tag` for None, else its value's.
template <class Optional>
bool keyOptional(ShapeCache::Key& key, const Optional& value,
                 int64_t none_tag) {
  if (!value.has_value()) {
    key.push_back(none_tag);
    return true;
  }
  return keyArg(key, *value);
}

}  // namespace

bool keyArg(ShapeCache::Key& key, const at::Tensor& t) {
  if (!t.defined()) {
    key.push_back(20);
    return true;
  }
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->layout() != c10::kStrided) {
    return false;
  }
  const int64_t flags = (impl->is_wrapped_number() ? 1 : 0) |
                        (impl->is_conj() ? 2 : 0) | (impl->is_neg() ? 4 : 0);
  const c10::IntArrayRef sizes = impl->sizes();
  const c10::IntArrayRef strides = impl->strides();
  key.insert(key.end(),
             {21, static_cast<int64_t>(impl->device_type()),
              static_cast<int64_t>(c10::typeMetaToScalarType(impl->dtype())),
              flags, static_cast<int64_t>(sizes.size())});
  key.append(sizes.begin(), sizes.end());
  key.append(strides.begin(), strides.end());
  key.push_back(impl->storage_offset());
  return true;
}

bool keyArg(ShapeCache::Key& key, const std::optional<at::Tensor>& t) {
  return keyOptional(key, t, 20);
}

bool keyArg(ShapeCache::Key& key, int64_t value) {
  key.insert(key.end(), {2, value});
  return true;
}

bool keyArg(ShapeCache::Key& key, double value) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  key.insert(key.end(), {3, bits});
  return true;
}

bool keyArg(ShapeCache::Key& key, bool value) {
  key.insert(key.end(), {4, value ? 1 : 0});
  return true;
}

bool keyArg(ShapeCache::Key& key, const c10::SymInt& value) {
  const std::optional<int64_t> concrete = value.maybe_as_int();
  return concrete.has_value() && keyArg(key, *concrete);
}

bool keyArg(ShapeCache::Key& key, at::IntArrayRef values) {
  key.insert(key.end(), {5, static_cast<int64_t>(values.size())});
  key.append(values.begin(), values.end());
  return true;
}

bool keyArg(ShapeCache::Key& key, c10::ArrayRef<double> values) {
  key.insert(key.end(), {10, static_cast<int64_t>(values.size())});
  for (const double value : values) {
    keyArg(key, value);
  }
  return true;
}

bool keyArg(ShapeCache::Key& key, at::OptionalIntArrayRef values) {
  return keyOptional(key, values, 1);
}

bool keyArg(ShapeCache::Key& key, c10::SymIntArrayRef values) {
  const std::optional<at::IntArrayRef> concrete =
      c10::asIntArrayRefSlowOpt(values);
  return concrete.has_value() && keyArg(key, *concrete);
}

bool keyArg(ShapeCache::Key& key, const at::Scalar& value) {
  if (value.isFloatingPoint()) {
    return keyArg(key, value.toDouble()) && keyArg(key, int64_t{30});
  }
  if (value.isBoolean()) {
    return keyArg(key, value.toBool());
  }
  if (value.isIntegral(/*includeBool=*/false) && !value.isSymbolic()) {
    return keyArg(key, value.toLong());
  }
  return false;  // complex, symbolic
}

bool keyArg(ShapeCache::Key& key, const std::optional<at::Scalar>& value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, at::ScalarType value) {
  key.insert(key.end(), {6, static_cast<int64_t>(value)});
  return true;
}

bool keyArg(ShapeCache::Key& key, std::optional<at::ScalarType> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, std::optional<int64_t> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, c10::string_view value) {
  key.insert(key.end(), {7, static_cast<int64_t>(value.size())});
  for (const char c : value) {
    key.push_back(c);
  }
  return true;
}

bool keyArg(ShapeCache::Key& key, std::optional<c10::string_view> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, std::optional<double> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, std::optional<bool> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, const std::optional<c10::SymInt>& value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, at::OptionalArrayRef<double> values) {
  return keyOptional(key, values, 1);
}

bool keyArg(ShapeCache::Key& key, at::OptionalSymIntArrayRef values) {
  return keyOptional(key, values, 1);
}

// Enumerations are integers in a boxed call, and keyed as such.
bool keyArg(ShapeCache::Key& key, at::MemoryFormat value) {
  return keyArg(key, static_cast<int64_t>(value));
}

bool keyArg(ShapeCache::Key& key, std::optional<at::MemoryFormat> value) {
  return keyOptional(key, value, 1);
}

bool keyArg(ShapeCache::Key& key, at::Layout value) {
  return keyArg(key, static_cast<int64_t>(value));
}

bool keyArg(ShapeCache::Key& key, std::optional<at::Layout> value) {
  return keyOptional(key, value, 1);
}

bool keyBools(ShapeCache::Key& key, c10::ArrayRef<bool> values) {
  key.insert(key.end(), {8, static_cast<int64_t>(values.size())});
  for (const bool value : values) {
    key.push_back(value ? 1 : 0);
  }
  return true;
}

}  // namespace accgen::runtime::emulate::detail
