#include "lpdt/core/onednn_float_conv.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lpdt/core/error.h"

#if LPDT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace lpdt {

bool onednn_float_conv_built() { return LPDT_HAVE_DNNL != 0; }

bool onednn_bf16_conv_fast() {
#if LPDT_HAVE_DNNL
  // The ISA oneDNN runs at (ONEDNN_MAX_CPU_ISA can lower it): its bfloat16 convolution kernels
  // need AVX-512; below, it would run a reference loop (hundreds of times slower).
  static const bool fast = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
        return true;
      default:
        return false;
    }
  }();
  return fast;
#else
  return false;
#endif
}

bool onednn_float_conv_applies(const at::Tensor& x, std::int64_t groups, bool bias) {
  if (!onednn_float_conv_built() || !x.defined() || !x.device().is_cpu() || x.dim() != 4 ||
      !x.is_contiguous(at::MemoryFormat::ChannelsLast) || groups != 1 || bias) {
    return false;
  }
  // One input channel (a grayscale stem): LibTorch describes the input as NCHW (the same bytes)
  // and the output as oneDNN's blocked layout, which selects oneDNN's first-layer kernel; on
  // channels-last descriptions oneDNN takes a general kernel that ran the stem's forward and
  // weight gradient 0.60x as fast (docs/benchmarks.md, "Training throughput", item 14).
  if (x.size(1) == 1) return false;
  return x.scalar_type() == at::kFloat ||
         (x.scalar_type() == at::kBFloat16 && onednn_bf16_conv_fast());
}

namespace {

struct Geometry {
  std::int64_t batch, in_channels, out_channels, height, width, kernel_h, kernel_w, stride,
      padding;
  at::ScalarType type;  // the operands' and results' type: float32 or bfloat16
  std::int64_t out_height() const { return (height + 2 * padding - kernel_h) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel_w) / stride + 1; }
};

Geometry geometry_of(at::IntArrayRef input_sizes, at::IntArrayRef weight_sizes,
                     std::int64_t stride, std::int64_t padding, at::ScalarType type,
                     const char* caller) {
  LPDT_CHECK(input_sizes.size() == 4 && weight_sizes.size() == 4 &&
                 input_sizes[1] == weight_sizes[1] && stride >= 1 && padding >= 0 &&
                 input_sizes[2] + 2 * padding >= weight_sizes[2] &&
                 input_sizes[3] + 2 * padding >= weight_sizes[3],
             std::string(caller) +
                 ": needs an input [b, in, H, W] and weights [out, in, kh, kw] with the same "
                 "in, stride >= 1, padding >= 0 and a kernel that fits the padded input");
  return Geometry{input_sizes[0],  input_sizes[1],  weight_sizes[0], input_sizes[2],
                  input_sizes[3],  weight_sizes[2], weight_sizes[3], stride,
                  padding,         type};
}

void check_float_cpu(const at::Tensor& t, const char* caller, const char* name) {
  LPDT_CHECK(t.defined() && t.device().is_cpu() &&
                 (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16) &&
                 t.dim() == 4,
             std::string(caller) + ": " + name + " must be a 4-D float32 or bfloat16 CPU tensor");
}

void check_input(const at::Tensor& x, const char* caller) {
  check_float_cpu(x, caller, "x");
  LPDT_CHECK(x.is_contiguous(at::MemoryFormat::ChannelsLast),
             std::string(caller) + ": x must be channels-last");
  LPDT_CHECK(x.scalar_type() == at::kFloat || onednn_bf16_conv_fast(),
             std::string(caller) + ": bfloat16 operands need a CPU with AVX-512 "
                                   "(onednn_bf16_conv_fast)");
}

// t as the operands' type, channels-last (one pass where either differs; none otherwise).
[[maybe_unused]] at::Tensor as_operand(const at::Tensor& t, at::ScalarType type) {
  return t.to(type, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::ChannelsLast)
      .contiguous(at::MemoryFormat::ChannelsLast);
}

void check_output_gradient(const at::Tensor& gy, const Geometry& g, const char* caller) {
  check_float_cpu(gy, caller, "gy");
  LPDT_CHECK(gy.sizes() == at::IntArrayRef({g.batch, g.out_channels, g.out_height(), g.out_width()}),
             std::string(caller) + ": gy must be [b, out, Ho, Wo] of the convolution");
}

#if !LPDT_HAVE_DNNL
[[noreturn]] void refuse_without_onednn(const char* caller) {
  throw InternalError(std::string(caller) + ": this build has no oneDNN (onednn_float_conv_built)");
}
#endif

#if LPDT_HAVE_DNNL

using Tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;

DataType data_type_of(at::ScalarType type) {
  return type == at::kBFloat16 ? DataType::bf16 : DataType::f32;
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The three primitives of one geometry, each made at its first use; the backward ones take the
// forward one's descriptor as their hint, as oneDNN requires.
class ConvPrimitives {
 public:
  explicit ConvPrimitives(const Geometry& g)
      : type_(data_type_of(g.type)),
        src_({g.batch, g.in_channels, g.height, g.width}, type_, Tag::nhwc),
        dst_({g.batch, g.out_channels, g.out_height(), g.out_width()}, type_, Tag::nhwc),
        plain_weight_({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}, type_, Tag::oihw),
        stride_{g.stride, g.stride},
        padding_{g.padding, g.padding} {
    const dnnl::memory::desc any_weight({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w},
                                        type_, Tag::any);
    // Scratch memory from the caller: a primitive's own would be shared by every call of it.
    attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    forward_pd_ = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, src_, any_weight,
                                        dst_, stride_, padding_, padding_),
        attr_, cpu_engine());
    forward_ = dnnl::convolution_forward(forward_pd_);
    forward_weight_reorder_ = weight_reorder(plain_weight_, forward_pd_.weights_desc());
  }

  const dnnl::memory::desc& src() const { return src_; }
  const dnnl::memory::desc& dst() const { return dst_; }
  const dnnl::memory::desc& plain_weight() const { return plain_weight_; }

  struct Step {
    const dnnl::primitive* primitive;
    dnnl::memory::desc weight;  // the layout the primitive takes (or gives) weights in
    std::optional<dnnl::reorder> weight_reorder;  // plain <-> that layout; none when equal
    dnnl::memory::desc scratchpad;
  };

  Step forward() const {
    return {&forward_, forward_pd_.weights_desc(), forward_weight_reorder_,
            forward_pd_.scratchpad_desc()};
  }

  Step backward_data() {
    if (!backward_data_) {
      const dnnl::memory::desc any_weight(plain_weight_.dims(), type_, Tag::any);
      backward_data_pd_ = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_,
                                                any_weight, dst_, stride_, padding_, padding_),
          attr_, cpu_engine(), forward_pd_);
      backward_data_ = dnnl::convolution_backward_data(backward_data_pd_);
      backward_data_weight_reorder_ =
          weight_reorder(plain_weight_, backward_data_pd_.weights_desc());
    }
    return {&*backward_data_, backward_data_pd_.weights_desc(), backward_data_weight_reorder_,
            backward_data_pd_.scratchpad_desc()};
  }

  Step backward_weights() {
    if (!backward_weights_) {
      const dnnl::memory::desc any_weight(plain_weight_.dims(), type_, Tag::any);
      backward_weights_pd_ = dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_,
                                                   any_weight, dst_, stride_, padding_, padding_),
          attr_, cpu_engine(), forward_pd_);
      backward_weights_ = dnnl::convolution_backward_weights(backward_weights_pd_);
      backward_weights_reorder_ =
          weight_reorder(backward_weights_pd_.diff_weights_desc(), plain_weight_);
    }
    return {&*backward_weights_, backward_weights_pd_.diff_weights_desc(),
            backward_weights_reorder_, backward_weights_pd_.scratchpad_desc()};
  }

 private:
  static std::optional<dnnl::reorder> weight_reorder(const dnnl::memory::desc& from,
                                                     const dnnl::memory::desc& to) {
    if (from == to) return std::nullopt;
    return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
  }

  DataType type_;
  dnnl::memory::desc src_, dst_, plain_weight_;
  dims stride_, padding_;
  dnnl::primitive_attr attr_;
  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_forward forward_;
  std::optional<dnnl::reorder> forward_weight_reorder_;
  dnnl::convolution_backward_data::primitive_desc backward_data_pd_;
  std::optional<dnnl::convolution_backward_data> backward_data_;
  std::optional<dnnl::reorder> backward_data_weight_reorder_;
  dnnl::convolution_backward_weights::primitive_desc backward_weights_pd_;
  std::optional<dnnl::convolution_backward_weights> backward_weights_;
  std::optional<dnnl::reorder> backward_weights_reorder_;
};

// The primitives of a geometry for the calling thread and its thread count. Per thread, as the
// integer backend's (quant/int8_direct_conv.cpp): passes run side by side on worker threads
// (core/pass_workers.h), and oneDNN splits a primitive's work for the thread count it was made
// under.
ConvPrimitives& primitives_for(const Geometry& g) {
  using Key = std::array<std::int64_t, 11>;
  thread_local std::map<Key, std::unique_ptr<ConvPrimitives>> made;
  const Key key{g.batch,    g.in_channels, g.out_channels, g.height,
                g.width,    g.kernel_h,    g.kernel_w,     g.stride,
                g.padding,  at::get_num_threads(), static_cast<std::int64_t>(g.type)};
  auto found = made.find(key);
  if (found == made.end()) found = made.emplace(key, std::make_unique<ConvPrimitives>(g)).first;
  return *found->second;
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const at::Tensor& t) {
  return dnnl::memory(desc, cpu_engine(), t.data_ptr());
}

// Runs one of the primitives: `weight` is the plain [out, in, kh, kw] tensor, read (forward,
// backward data: reordered into the primitive's layout first when that differs) or written
// (backward weights: reordered out of it after); `args` names the other operands.
void run(const ConvPrimitives::Step& step, const dnnl::memory::desc& plain_weight,
         const at::Tensor& weight, bool weight_is_output,
         std::unordered_map<int, dnnl::memory> args) {
  dnnl::stream stream(cpu_engine());
  const at::Tensor scratch =
      at::empty({static_cast<std::int64_t>(step.scratchpad.get_size()) + 1}, at::kByte);
  args.emplace(DNNL_ARG_SCRATCHPAD, wrap(step.scratchpad, scratch));
  dnnl::memory plain = wrap(plain_weight, weight);
  const int weight_arg = weight_is_output ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  if (!step.weight_reorder) {
    args.emplace(weight_arg, plain);
    step.primitive->execute(stream, args);
  } else {
    const at::Tensor laid_out =
        at::empty({static_cast<std::int64_t>(step.weight.get_size() / weight.element_size())},
                  weight.options());
    dnnl::memory inner = wrap(step.weight, laid_out);
    args.emplace(weight_arg, inner);
    if (!weight_is_output) step.weight_reorder->execute(stream, plain, inner);
    step.primitive->execute(stream, args);
    if (weight_is_output) step.weight_reorder->execute(stream, inner, plain);
  }
  stream.wait();
}

#endif

}  // namespace

at::Tensor onednn_conv2d_forward(const at::Tensor& x, const at::Tensor& weight_in,
                                 std::int64_t stride, std::int64_t padding) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_forward", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_forward";
  check_input(x, kCaller);
  check_float_cpu(weight_in, kCaller, "weight");
  const Geometry g =
      geometry_of(x.sizes(), weight_in.sizes(), stride, padding, x.scalar_type(), kCaller);
  const at::Tensor y = at::empty({g.batch, g.out_channels, g.out_height(), g.out_width()},
                                 x.options().memory_format(at::MemoryFormat::ChannelsLast));
#if LPDT_HAVE_DNNL
  const at::Tensor weight = weight_in.to(g.type).contiguous();
  ConvPrimitives& p = primitives_for(g);
  run(p.forward(), p.plain_weight(), weight, /*weight_is_output=*/false,
      {{DNNL_ARG_SRC, wrap(p.src(), x)}, {DNNL_ARG_DST, wrap(p.dst(), y)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return y;
}

at::Tensor onednn_conv2d_input_grad(const at::Tensor& gy_in, const at::Tensor& weight_in,
                                    at::IntArrayRef input_sizes, std::int64_t stride,
                                    std::int64_t padding) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_input_grad", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_input_grad";
  check_float_cpu(weight_in, kCaller, "weight");
  const Geometry g =
      geometry_of(input_sizes, weight_in.sizes(), stride, padding, gy_in.scalar_type(), kCaller);
  check_output_gradient(gy_in, g, kCaller);
  LPDT_CHECK(g.type == at::kFloat || onednn_bf16_conv_fast(),
             std::string(kCaller) + ": bfloat16 operands need a CPU with AVX-512");
  const at::Tensor dx =
      at::empty(input_sizes, gy_in.options().memory_format(at::MemoryFormat::ChannelsLast));
#if LPDT_HAVE_DNNL
  const at::Tensor gy = gy_in.contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor weight = weight_in.to(g.type).contiguous();
  ConvPrimitives& p = primitives_for(g);
  run(p.backward_data(), p.plain_weight(), weight, /*weight_is_output=*/false,
      {{DNNL_ARG_DIFF_DST, wrap(p.dst(), gy)}, {DNNL_ARG_DIFF_SRC, wrap(p.src(), dx)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return dx;
}

at::Tensor onednn_conv2d_weight_grad(const at::Tensor& gy_in, const at::Tensor& x,
                                     at::IntArrayRef weight_sizes, std::int64_t stride,
                                     std::int64_t padding) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_weight_grad", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_weight_grad";
  check_input(x, kCaller);
  const Geometry g =
      geometry_of(x.sizes(), weight_sizes, stride, padding, x.scalar_type(), kCaller);
  check_output_gradient(gy_in, g, kCaller);
  const at::Tensor dw = at::empty(weight_sizes, x.options());
#if LPDT_HAVE_DNNL
  const at::Tensor gy = as_operand(gy_in, g.type);
  ConvPrimitives& p = primitives_for(g);
  run(p.backward_weights(), p.plain_weight(), dw, /*weight_is_output=*/true,
      {{DNNL_ARG_SRC, wrap(p.src(), x)}, {DNNL_ARG_DIFF_DST, wrap(p.dst(), gy)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return dw;
}

}  // namespace lpdt
