// The operators PyTorch leaves to an out-of-tree device, emulated.
//
// --8<-- [start:hook-operators-note]
// Note [Hook operators]
// ~~~~~~~~~~~~~~~~~~~~~
// ATen routes convolution and fused attention on a PrivateUse1 device to
// four "overrideable" operators whose default kernels only raise:
// at::_convolution picks ConvBackend::Overrideable for any device it does
// not know, and scaled_dot_product_attention calls the fused operator when
// the device's choice (_fused_sdp_choice_stub) says `overrideable`. Their
// CompositeExplicitAutograd defaults win over a backend fallback. The cells
// of nn.LSTM and nn.GRU call the fused cell operators on a PrivateUse1
// device as on CUDA, and those have no CPU kernel a fallback could run.
// So every backend registers them: generated csrc/ops/RegisterEmulate*.cpp
// files register the functions below unless specs/operators.yaml gives one of
// them `kind: kernel`, and the kernel file created for it starts out
// calling the same function. The results have the layouts the meta kernels
// give (convolution results contiguous, attention output laid out like the
// query), which torch.compile checks. The SDPA choice is part of the
// runtime and registered with it.
// --8<-- [end:hook-operators-note]
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <c10/core/SymIntArrayRef.h>

namespace accgen::runtime::hooks {

/// aten::convolution_overrideable: at::convolution's CPU kernels on the
/// device memory (1-3 spatial dimensions, transposed, grouped, dilated).
at::Tensor convolutionOverrideable(
    const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& bias, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
    c10::SymIntArrayRef output_padding, c10::SymInt groups);

/// aten::convolution_backward_overrideable.
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolutionBackwardOverrideable(
    const at::Tensor& grad_output, const at::Tensor& input,
    const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
    c10::SymIntArrayRef output_padding, c10::SymInt groups,
    std::array<bool, 3> output_mask);

/// aten::_scaled_dot_product_fused_attention_overrideable: the CPU flash
/// attention kernel on the device memory, for 4-D inputs.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt,
           c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
scaledDotProductFusedAttentionOverrideable(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const std::optional<at::Tensor>& attn_bias, double dropout_p,
    bool is_causal, bool return_debug_mask, std::optional<double> scale);

/// aten::_scaled_dot_product_fused_attention_overrideable_backward,
/// including the gradient of an additive mask that requires one.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
scaledDotProductFusedAttentionOverrideableBackward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& cum_seq_q,
    const at::Tensor& cum_seq_k, c10::SymInt max_q, c10::SymInt max_k,
    double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale);

/// aten::_thnn_fused_lstm_cell, which nn.LSTM's cells call on a
/// PrivateUse1 device: (hy, cy, workspace of the activated gates).
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnnFusedLstmCell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates,
    const at::Tensor& cx, const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias);

/// aten::_thnn_fused_lstm_cell_backward_impl: (grad of the gates, grad of
/// cx, grad of the bias when has_bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnnFusedLstmCellBackwardImpl(
    const std::optional<at::Tensor>& grad_hy,
    const std::optional<at::Tensor>& grad_cy, const at::Tensor& cx,
    const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);

/// aten::_thnn_fused_gru_cell, which nn.GRU's cells call on a PrivateUse1
/// device: (hy, workspace).
std::tuple<at::Tensor, at::Tensor> thnnFusedGruCell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates,
    const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
    const std::optional<at::Tensor>& hidden_bias);

/// aten::_thnn_fused_gru_cell_backward: grads of the input gates, hidden
/// gates, hx, and of the two biases when has_bias.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
thnnFusedGruCellBackward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                         bool has_bias);

/// The device's SDPA kernel choice (_fused_sdp_choice_stub and
/// aten::_fused_sdp_choice): `overrideable` for dense 4-D inputs of one
/// floating dtype, without dropout or grouped heads, while the user allows
/// it (torch.nn.attention.sdpa_kernel); `math` otherwise. It reads only
/// metadata, so it also runs on fake tensors.
int64_t fusedSdpChoice(const at::Tensor& query, const at::Tensor& key,
                       const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_mask,
                       double dropout_p, bool is_causal,
                       std::optional<double> scale, bool enable_gqa);

}  // namespace accgen::runtime::hooks
