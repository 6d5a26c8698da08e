// The operators PyTorch leaves to an out-of-tree device: convolution and
// fused attention ("overrideable" hooks), and the device's choice of the
// attention kernel (Note [Hook operators] in accgen/runtime/HookOps.h).
#include "accgen/runtime/HookOps.h"

#include <ATen/Context.h>
#include <ATen/OpMathType.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/_scaled_dot_product_fused_attention_overrideable_backward_ops.h>
#include <ATen/ops/_scaled_dot_product_fused_attention_overrideable_ops.h>
#include <ATen/ops/_thnn_fused_gru_cell_backward_ops.h>
#include <ATen/ops/_thnn_fused_gru_cell_ops.h>
#include <ATen/ops/_thnn_fused_lstm_cell_backward_impl_ops.h>
#include <ATen/ops/_thnn_fused_lstm_cell_ops.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/convolution_backward_overrideable_ops.h>
#include <ATen/ops/convolution_overrideable_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "Internal.h"
#include "accgen/runtime/Emulate.h"
#include "accgen/runtime/Registration.h"
#include "accgen/runtime/Runtime.h"

namespace accgen::runtime::hooks {
namespace {

// Note [Kernel results in device memory]: a hook's CPU kernel allocates its
// results on the device and stream of the call.
using ::accgen::runtime::detail::KernelAllocations;
using ::accgen::runtime::detail::KernelResultsPlace;

std::vector<int64_t> concrete(c10::SymIntArrayRef values) {
  return C10_AS_INTARRAYREF_SLOW(values).vec();
}

// A device tensor of `sizes` whose dimensions are laid out in the order of
// `like`'s strides (what the meta kernels' alloc_with_matching_layout gives).
at::Tensor emptyWithLayoutOf(const at::Tensor& like, at::IntArrayRef sizes,
                             at::ScalarType dtype) {
  std::vector<int64_t> order(like.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return like.stride(a) > like.stride(b);
  });
  std::vector<int64_t> strides(sizes.size());
  int64_t next = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = next;
    next *= std::max<int64_t>(sizes[*it], 1);
  }
  return at::empty_strided(sizes, strides,
                           like.options().dtype(dtype).device(like.device()));
}

// The host tensors `host` copied to new contiguous device tensors (the
// layout the meta kernels give); undefined ones stay undefined.
template <std::size_t N>
std::array<at::Tensor, N> toDevice(const std::array<at::Tensor, N>& host,
                                   c10::Device device) {
  std::array<at::Tensor, N> out;
  emulate::DeviceCopies copies;
  for (std::size_t i = 0; i < N; ++i) {
    if (host[i].defined()) {
      out[i] = copies.add(host[i].contiguous(), device);
    }
  }
  copies.launch();
  return out;
}

// Note [Queued hook operators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Convolution and fused attention are queued on their stream, as the
// emulated operators are (Note [Queued operators]), once the call's results
// are known ahead and its arguments are known to pass the CPU kernel's
// checks. The first call with each key of its arguments (Note [Shape cache]
// in src/emulate/Engine.cpp) runs on the stream and waits, so that a wrong
// argument raises at the call, as on CUDA; it records the geometry of the
// results its CPU kernel gave. The later calls with that key allocate the
// results on the device with that geometry (fused attention allocates its
// own from the arguments' shapes) and queue the CPU kernel, which writes
// into their host views: one more pass over the results than a call that
// waits. Fused attention with dropout draws from the CPU's generator and
// always waits, as random operators do. Each operator keeps its last
// kSeenCalls keys, the distinct convolutions of a network.

using emulate::detail::ShapeCache;
constexpr std::size_t kSeenCalls = 64;

// The key of a hook call: its operator's tag, then every argument's
// (emulate::detail::keyArg); nullopt when an argument is not keyed.
template <class... Args>
std::optional<ShapeCache::Key> callKey(int64_t tag, const Args&... args) {
  ShapeCache::Key key{tag};
  if ((emulate::detail::keyArg(key, args) && ...)) {
    return key;
  }
  return std::nullopt;
}

// Runs `compute` (host views in, nothing out) for a call whose results
// exist already: queued when a call with `key` ran before, else on the
// stream, waiting, and `key` remembered.
template <class Compute>
void runSeen(ShapeCache& seen, std::optional<ShapeCache::Key> key,
             emulate::HostViews& host, const Compute& compute,
             const char* what) {
  ShapeCache::Results none;
  if (key.has_value() && seen.lookup(*key, none)) {
    host.queue(compute, what);
    return;
  }
  host.run(compute);
  if (key.has_value()) {
    seen.insert(std::move(*key), none);
  }
}

// The device results of `compute` (host views in, its N results out,
// undefined where an output mask leaves one out, contiguous): queued into
// results allocated with the geometry the first call with `key` gave, or
// computed on the stream, waiting, and that geometry remembered.
template <std::size_t N, class Compute>
std::array<at::Tensor, N> resultsSeen(ShapeCache& seen,
                                      std::optional<ShapeCache::Key> key,
                                      emulate::HostViews& host,
                                      const Compute& compute,
                                      const char* what) {
  ShapeCache::Results shapes;
  if (key.has_value() && seen.lookup(*key, shapes) && shapes.size() == N) {
    const c10::DeviceGuard guard(host.device());
    std::array<at::Tensor, N> results;
    std::array<at::Tensor, N> views;
    for (std::size_t i = 0; i < N; ++i) {
      if (shapes[i].dtype != at::ScalarType::Undefined) {
        results[i] = emulate::detail::allocateResult(
            shapes[i].sizes, shapes[i].strides, shapes[i].dtype);
        views[i] = host(results[i]);
      }
    }
    host.queue(
        [compute, views] {
          const std::array<at::Tensor, N> computed = compute();
          for (std::size_t i = 0; i < N; ++i) {
            if (views[i].defined()) {
              at::Tensor(views[i]).copy_(computed[i]);
            }
          }
        },
        what);
    return results;
  }
  std::array<at::Tensor, N> computed;
  const auto place = KernelResultsPlace::of(host.device().index());
  host.run([&] {
    const KernelAllocations allocations(&place);
    computed = compute();
  });
  if (key.has_value()) {
    for (const at::Tensor& result : computed) {
      ShapeCache::Result& shape = shapes.emplace_back();
      shape.dtype = at::ScalarType::Undefined;
      if (result.defined()) {
        shape.sizes.assign(result.sizes().begin(), result.sizes().end());
        shape.strides.assign(result.strides().begin(), result.strides().end());
        shape.dtype = result.scalar_type();
      }
    }
    seen.insert(std::move(*key), shapes);
  }
  return toDevice(computed, host.device());
}

// The host views of what a fused LSTM or GRU cell takes: the gates from
// the input and from the hidden state, the cell's state, and the optional
// biases of each gate set.
struct CellInputs {
  CellInputs(emulate::HostViews& host, const at::Tensor& input_gates,
             const at::Tensor& hidden_gates, const at::Tensor& cell_state,
             const std::optional<at::Tensor>& input_bias,
             const std::optional<at::Tensor>& hidden_bias)
      : input(host(input_gates)),
        hidden(host(hidden_gates)),
        state(host(cell_state)),
        input_bias(host(input_bias)),
        hidden_bias(host(hidden_bias)) {}

  // Inside the cell's kernel: the input and hidden gates with their biases.
  std::pair<at::Tensor, at::Tensor> gates() const {
    if (input_bias.has_value() && input_bias->defined()) {
      return {input.add(*input_bias), hidden.add(*hidden_bias)};
    }
    return {input, hidden};
  }

  at::Tensor input;
  at::Tensor hidden;
  at::Tensor state;
  std::optional<at::Tensor> input_bias;
  std::optional<at::Tensor> hidden_bias;
};

at::Tensor orZeros(const at::Tensor& grad, const at::Tensor& like) {
  return grad.defined() ? grad : at::zeros_like(like);
}

}  // namespace

// The hooks' parameters are the dispatcher's unboxed signature, which takes
// c10::SymInt by value.
// NOLINTBEGIN(performance-unnecessary-value-param)
at::Tensor convolutionOverrideable(
    const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& bias, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
    c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  static ShapeCache seen(kSeenCalls);
  emulate::HostViews host;
  const at::Tensor h_input = host(input);
  const at::Tensor h_weight = host(weight);
  const std::optional<at::Tensor> h_bias = host(bias);
  const auto compute =
      [=, stride = concrete(stride), padding = concrete(padding),
       dilation = concrete(dilation), output_padding = concrete(output_padding),
       groups = groups.expect_int()] {
        // Contiguous, as the meta kernel (and so torch.compile) expects.
        return std::array<at::Tensor, 1>{
            at::convolution(h_input, h_weight, h_bias, stride, padding,
                            dilation, transposed, output_padding, groups)
                .contiguous()};
      };
  return resultsSeen<1>(seen,
                        callKey(0, input, weight, bias, stride, padding,
                                dilation, transposed, output_padding, groups),
                        host, compute, "convolution_overrideable")[0];
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolutionBackwardOverrideable(
    const at::Tensor& grad_output, const at::Tensor& input,
    const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
    c10::SymIntArrayRef output_padding, c10::SymInt groups,
    std::array<bool, 3> output_mask) {
  static ShapeCache seen(kSeenCalls);
  emulate::HostViews host;
  const at::Tensor h_grad = host(grad_output);
  const at::Tensor h_input = host(input);
  const at::Tensor h_weight = host(weight);
  const int64_t num_groups = groups.expect_int();
  const std::vector<int64_t> bias_sizes = {weight.size(transposed ? 1 : 0) *
                                           (transposed ? num_groups : 1)};
  const auto compute = [=, stride = concrete(stride),
                        padding = concrete(padding),
                        dilation = concrete(dilation),
                        output_padding = concrete(output_padding)] {
    std::array<at::Tensor, 3> grads;
    std::tie(grads[0], grads[1], grads[2]) = at::convolution_backward(
        h_grad, h_input, h_weight, bias_sizes, stride, padding, dilation,
        transposed, output_padding, num_groups, output_mask);
    for (at::Tensor& grad : grads) {
      if (grad.defined()) {
        grad = grad.contiguous();
      }
    }
    return grads;
  };
  auto [grad_input, grad_weight, grad_bias] = resultsSeen<3>(
      seen,
      callKey(1, grad_output, input, weight, stride, padding, dilation,
              transposed, output_padding, groups, output_mask),
      host, compute, "convolution_backward_overrideable");
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt,
           c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
scaledDotProductFusedAttentionOverrideable(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const std::optional<at::Tensor>& attn_bias, double dropout_p,
    bool is_causal, bool /*return_debug_mask*/, std::optional<double> scale) {
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4,
              "_scaled_dot_product_fused_attention_overrideable on '",
              kDeviceName, "' takes 4-D query, key and value, got ",
              query.dim(), "-D, ", key.dim(), "-D and ", value.dim(), "-D");
  c10::DeviceGuard guard(query.device());
  const int64_t batch = query.size(0);
  const int64_t heads = query.size(1);
  const int64_t length_q = query.size(2);
  const int64_t length_kv = key.size(2);
  std::vector<int64_t> out_sizes = query.sizes().vec();
  out_sizes.back() = value.size(-1);
  at::Tensor out = emptyWithLayoutOf(query, out_sizes, query.scalar_type());
  // The CPU flash kernel keeps the log-sum-exp in the operand's math type:
  // float for float, half and bfloat16, double for double.
  at::Tensor logsumexp =
      at::empty({batch, heads, length_q},
                query.options().dtype(at::toOpMathType(query.scalar_type())));
  emulate::HostViews host;
  const at::Tensor h_query = host(query);
  const at::Tensor h_key = host(key);
  const at::Tensor h_value = host(value);
  const std::optional<at::Tensor> h_bias = host(attn_bias);
  at::Tensor h_out = host(out);
  at::Tensor h_logsumexp = host(logsumexp);
  const auto compute = [=] {
    auto [o, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
        h_query, h_key, h_value, dropout_p, is_causal, h_bias, scale);
    h_out.copy_(o);
    h_logsumexp.copy_(lse);
  };
  static ShapeCache seen(kSeenCalls);
  runSeen(seen,
          dropout_p == 0.0
              ? callKey(2, query, key, value, attn_bias, is_causal, scale)
              : std::nullopt,
          host, compute, "_scaled_dot_product_fused_attention_overrideable");
  const auto philox = at::empty({}, at::TensorOptions().dtype(at::kLong));
  return {out,       logsumexp, at::Tensor(), at::Tensor(), length_q,
          length_kv, philox,    philox,       at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
scaledDotProductFusedAttentionOverrideableBackward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/,
    const at::Tensor& /*cum_seq_k*/, c10::SymInt /*max_q*/,
    c10::SymInt /*max_k*/, double dropout_p, bool is_causal,
    const at::Tensor& /*philox_seed*/, const at::Tensor& /*philox_offset*/,
    std::optional<double> scale) {
  c10::DeviceGuard guard(query.device());
  at::Tensor grad_query = at::empty_like(query);
  at::Tensor grad_key = at::empty_like(key);
  at::Tensor grad_value = at::empty_like(value);
  at::Tensor grad_bias =
      attn_bias.defined() ? at::empty_like(attn_bias) : at::Tensor();
  emulate::HostViews host;
  const at::Tensor h_grad_out = host(grad_out);
  const at::Tensor h_query = host(query);
  const at::Tensor h_key = host(key);
  const at::Tensor h_value = host(value);
  const at::Tensor h_bias = host(attn_bias);
  const at::Tensor h_out = host(out);
  const at::Tensor h_logsumexp = host(logsumexp);
  at::Tensor h_grad_query = host(grad_query);
  at::Tensor h_grad_key = host(grad_key);
  at::Tensor h_grad_value = host(grad_value);
  at::Tensor h_grad_bias = host(grad_bias);
  const bool bias_grad = attn_bias.defined() && grad_input_mask[3];
  const auto compute = [=] {
    std::optional<at::Tensor> mask;
    if (h_bias.defined()) {
      mask = h_bias;
    }
    auto [gq, gk, gv] =
        at::_scaled_dot_product_flash_attention_for_cpu_backward(
            h_grad_out, h_query, h_key, h_value, h_out, h_logsumexp, dropout_p,
            is_causal, mask, scale);
    h_grad_query.copy_(gq);
    h_grad_key.copy_(gk);
    h_grad_value.copy_(gv);
    if (bias_grad) {
      // The flash kernel has no gradient for the additive mask: it is the
      // gradient of the scores, dS = P * (dP - rowsum(dO * O)), with the
      // probabilities P recovered from the log-sum-exp, summed to the
      // mask's (broadcast) shape; computed in the operands' math type.
      const at::ScalarType math = at::toOpMathType(h_query.scalar_type());
      const at::Tensor q = h_query.to(math);
      const double factor =
          scale.has_value()
              ? *scale
              : 1.0 / std::sqrt(static_cast<double>(h_query.size(-1)));
      const at::Tensor scores = at::matmul(q, h_key.to(math).transpose(-2, -1))
                                    .mul(factor)
                                    .add(h_bias.to(math));
      const at::Tensor probs = at::exp(scores.sub(h_logsumexp.unsqueeze(-1)));
      const at::Tensor grad_o = h_grad_out.to(math);
      const at::Tensor grad_probs =
          at::matmul(grad_o, h_value.to(math).transpose(-2, -1));
      const at::Tensor row = grad_o.mul(h_out.to(math)).sum(-1, true);
      h_grad_bias.copy_(
          probs.mul(grad_probs.sub(row)).sum_to_size(h_bias.sizes()));
    }
  };
  static ShapeCache seen(kSeenCalls);
  runSeen(seen,
          dropout_p == 0.0
              ? callKey(3, grad_out, query, key, value, attn_bias,
                        grad_input_mask, out, logsumexp, is_causal, scale)
              : std::nullopt,
          host, compute,
          "_scaled_dot_product_fused_attention_overrideable_backward");
  return {grad_query, grad_key, grad_value, grad_bias};
}
// NOLINTEND(performance-unnecessary-value-param)

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnnFusedLstmCell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates,
    const at::Tensor& cx, const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  emulate::HostViews host;
  const CellInputs cell_inputs(host, input_gates, hidden_gates, cx, input_bias,
                               hidden_bias);
  const at::Tensor& h_cx = cell_inputs.state;
  std::array<at::Tensor, 3> results;
  host.run([&] {
    const auto [input, hidden] = cell_inputs.gates();
    const auto chunks = input.add(hidden).chunk(4, 1);
    const at::Tensor in = chunks[0].sigmoid();
    const at::Tensor forget = chunks[1].sigmoid();
    const at::Tensor cell = chunks[2].tanh();
    const at::Tensor out = chunks[3].sigmoid();
    const at::Tensor cy = forget.mul(h_cx).add(in.mul(cell));
    // The workspace holds the activated gates, for the backward.
    results = {out.mul(cy.tanh()), cy, at::cat({in, forget, cell, out}, 1)};
  });
  auto [hy, cy, workspace] = toDevice(results, host.device());
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnnFusedLstmCellBackwardImpl(
    const std::optional<at::Tensor>& grad_hy,
    const std::optional<at::Tensor>& grad_cy, const at::Tensor& cx,
    const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  emulate::HostViews host;
  const std::optional<at::Tensor> h_grad_hy = host(grad_hy);
  const std::optional<at::Tensor> h_grad_cy = host(grad_cy);
  const at::Tensor h_cx = host(cx);
  const at::Tensor h_cy = host(cy);
  const at::Tensor h_workspace = host(workspace);
  std::array<at::Tensor, 3> results;
  host.run([&] {
    const auto gates = h_workspace.chunk(4, 1);
    const at::Tensor& in = gates[0];
    const at::Tensor& forget = gates[1];
    const at::Tensor& cell = gates[2];
    const at::Tensor& out = gates[3];
    const at::Tensor tanh_cy = h_cy.tanh();
    const at::Tensor d_hy = orZeros(h_grad_hy.value_or(at::Tensor()), h_cy);
    const at::Tensor d_cy =
        orZeros(h_grad_cy.value_or(at::Tensor()), h_cy)
            .add(d_hy.mul(out).mul(tanh_cy.mul(tanh_cy).neg().add(1)));
    const at::Tensor d_in = d_cy.mul(cell).mul(in.mul(in.neg().add(1)));
    const at::Tensor d_forget =
        d_cy.mul(h_cx).mul(forget.mul(forget.neg().add(1)));
    const at::Tensor d_cell = d_cy.mul(in).mul(cell.mul(cell).neg().add(1));
    const at::Tensor d_out = d_hy.mul(tanh_cy).mul(out.mul(out.neg().add(1)));
    const at::Tensor d_gates = at::cat({d_in, d_forget, d_cell, d_out}, 1);
    results = {d_gates, d_cy.mul(forget),
               has_bias ? d_gates.sum(0) : at::Tensor()};
  });
  auto [d_gates, d_cx, d_bias] = toDevice(results, host.device());
  return {d_gates, d_cx, d_bias};
}

std::tuple<at::Tensor, at::Tensor> thnnFusedGruCell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates,
    const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias) {
  emulate::HostViews host;
  const CellInputs cell_inputs(host, input_gates, hidden_gates, hx, input_bias,
                               hidden_bias);
  const at::Tensor& h_hx = cell_inputs.state;
  std::array<at::Tensor, 2> results;
  host.run([&] {
    const auto [input, hidden] = cell_inputs.gates();
    const auto i = input.chunk(3, 1);
    const auto h = hidden.chunk(3, 1);
    const at::Tensor reset = i[0].add(h[0]).sigmoid();
    const at::Tensor update = i[1].add(h[1]).sigmoid();
    const at::Tensor fresh = i[2].add(reset.mul(h[2])).tanh();
    const at::Tensor hy = fresh.add(update.mul(h_hx.sub(fresh)));
    // The workspace holds what the backward needs: the gates, the input
    // state and the hidden part of the new gate.
    results = {hy, at::cat({reset, update, fresh, h_hx, h[2]}, 1)};
  });
  auto [hy, workspace] = toDevice(results, host.device());
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
thnnFusedGruCellBackward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                         bool has_bias) {
  emulate::HostViews host;
  const at::Tensor h_grad = host(grad_hy);
  const at::Tensor h_workspace = host(workspace);
  std::array<at::Tensor, 5> results;
  host.run([&] {
    const auto parts = h_workspace.chunk(5, 1);
    const at::Tensor& reset = parts[0];
    const at::Tensor& update = parts[1];
    const at::Tensor& fresh = parts[2];
    const at::Tensor& hx = parts[3];
    const at::Tensor& hidden_new = parts[4];
    const at::Tensor d_fresh =
        h_grad.mul(update.neg().add(1)).mul(fresh.mul(fresh).neg().add(1));
    const at::Tensor d_update =
        h_grad.mul(hx.sub(fresh)).mul(update.mul(update.neg().add(1)));
    const at::Tensor d_reset =
        d_fresh.mul(hidden_new).mul(reset.mul(reset.neg().add(1)));
    const at::Tensor d_input = at::cat({d_reset, d_update, d_fresh}, 1);
    const at::Tensor d_hidden =
        at::cat({d_reset, d_update, d_fresh.mul(reset)}, 1);
    results = {d_input, d_hidden, h_grad.mul(update),
               has_bias ? d_input.sum(0) : at::Tensor(),
               has_bias ? d_hidden.sum(0) : at::Tensor()};
  });
  auto [d_input, d_hidden, d_hx, d_input_bias, d_hidden_bias] =
      toDevice(results, host.device());
  return {d_input, d_hidden, d_hx, d_input_bias, d_hidden_bias};
}

int64_t fusedSdpChoice(const at::Tensor& query, const at::Tensor& key,
                       const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_mask,
                       double dropout_p, bool /*is_causal*/,
                       std::optional<double> /*scale*/, bool enable_gqa) {
  // Metadata only: under torch.compile this runs on fake tensors.
  const auto math = static_cast<int64_t>(at::SDPBackend::math);
  if (!at::globalContext().userEnabledOverrideableSDP()) {
    return math;
  }
  const bool dense = query.layout() == at::kStrided &&
                     key.layout() == at::kStrided &&
                     value.layout() == at::kStrided && !query.is_nested() &&
                     !key.is_nested() && !value.is_nested();
  const bool four_d = query.dim() == 4 && key.dim() == 4 && value.dim() == 4;
  if (!dense || !four_d || dropout_p != 0.0) {
    return math;
  }
  const auto dtype = query.scalar_type();
  const bool floating = dtype == at::kFloat || dtype == at::kDouble ||
                        dtype == at::kBFloat16 || dtype == at::kHalf;
  if (!floating || key.scalar_type() != dtype || value.scalar_type() != dtype) {
    return math;
  }
  // Heads of key and value shared by several query heads (GQA), and head
  // sizes that differ, are left to the math path.
  if (enable_gqa || query.sym_size(1) != key.sym_size(1) ||
      key.sym_size(1) != value.sym_size(1) ||
      query.sym_size(-1) != key.sym_size(-1) ||
      key.sym_size(-1) != value.sym_size(-1)) {
    return math;
  }
  if (attn_mask.has_value() && attn_mask->defined() &&
      (attn_mask->dim() > 4 || (attn_mask->scalar_type() != at::kBool &&
                                attn_mask->scalar_type() != dtype))) {
    return math;
  }
  return static_cast<int64_t>(at::SDPBackend::overrideable);
}

// Every hook operator of the table has its function here, with the
// operator's exact signature (Note [The runtime's operator sets]).
#define ACCGEN_HOOK(name, ops, function)                                   \
  static_assert(std::is_same_v<decltype(function), at::_ops::ops::schema>, \
                "the hook function of " name                               \
                " does not have the operator's signature");
#include "accgen/runtime/OperatorSets.def"
#undef ACCGEN_HOOK

}  // namespace accgen::runtime::hooks

// The SDPA kernel choice of the device, set while the backend owns it
// (Note [One PrivateUse1 backend per process]).
ACCGEN_LIBRARY_IMPL(aten, PrivateUse1, m) {
  at::native::_fused_sdp_choice_stub.set_privateuse1_dispatch_ptr(
      &accgen::runtime::hooks::fusedSdpChoice);
  m.impl("_fused_sdp_choice", TORCH_FN(accgen::runtime::hooks::fusedSdpChoice));
}
