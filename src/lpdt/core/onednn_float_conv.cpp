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
  OnednnConvAlgorithm algorithm;
  std::int64_t out_height() const { return (height + 2 * padding - kernel_h) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel_w) / stride + 1; }
};

Geometry geometry_of(at::IntArrayRef input_sizes, at::IntArrayRef weight_sizes,
                     std::int64_t stride, std::int64_t padding, at::ScalarType type,
                     OnednnConvAlgorithm algorithm, const char* caller) {
  LPDT_CHECK(input_sizes.size() == 4 && weight_sizes.size() == 4 &&
                 input_sizes[1] == weight_sizes[1] && stride >= 1 && padding >= 0 &&
                 input_sizes[2] + 2 * padding >= weight_sizes[2] &&
                 input_sizes[3] + 2 * padding >= weight_sizes[3],
             std::string(caller) +
                 ": needs an input [b, in, H, W] and weights [out, in, kh, kw] with the same "
                 "in, stride >= 1, padding >= 0 and a kernel that fits the padded input");
  LPDT_CHECK(algorithm == OnednnConvAlgorithm::kDirect || type == at::kFloat,
             std::string(caller) + ": Winograd takes float32 operands only");
  return Geometry{input_sizes[0],  input_sizes[1],  weight_sizes[0], input_sizes[2],
                  input_sizes[3],  weight_sizes[2], weight_sizes[3], stride,
                  padding,         type,            algorithm};
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

// An activation operand (source, destination or their gradients) that the primitive takes in
// another layout than the caller's channels-last tensor (Winograd's blocked layouts): reordered
// into `inner` before the primitive runs (an input) or out of it after (an output).
struct ActivationReorder {
  int arg;
  dnnl::memory::desc inner;
  dnnl::reorder reorder;  // channels-last -> inner for an input, inner -> channels-last for an output
  bool input;
};

// The three primitives of one geometry, each made at its first use; the backward ones take the
// forward one's descriptor as their hint, as oneDNN requires.
class ConvPrimitives {
 public:
  explicit ConvPrimitives(const Geometry& g)
      : type_(data_type_of(g.type)),
        algorithm_(g.algorithm == OnednnConvAlgorithm::kWinograd
                       ? dnnl::algorithm::convolution_winograd
                       : dnnl::algorithm::convolution_direct),
        src_({g.batch, g.in_channels, g.height, g.width}, type_, Tag::nhwc),
        dst_({g.batch, g.out_channels, g.out_height(), g.out_width()}, type_, Tag::nhwc),
        plain_weight_({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}, type_, Tag::oihw),
        stride_{g.stride, g.stride},
        padding_{g.padding, g.padding} {
    const dnnl::memory::desc any_weight({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w},
                                        type_, Tag::any);
    // Direct kernels read and write channels-last activations as they are; Winograd's take
    // the layouts they choose (reordered in run()).
    const bool winograd = g.algorithm == OnednnConvAlgorithm::kWinograd;
    primitive_src_ = winograd ? dnnl::memory::desc(src_.dims(), type_, Tag::any) : src_;
    primitive_dst_ = winograd ? dnnl::memory::desc(dst_.dims(), type_, Tag::any) : dst_;
    // Scratch memory from the caller: a primitive's own would be shared by every call of it.
    attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    forward_pd_ = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm_,
                                        primitive_src_, any_weight, primitive_dst_, stride_,
                                        padding_, padding_),
        attr_, cpu_engine());
    forward_ = dnnl::convolution_forward(forward_pd_);
    forward_weight_reorder_ = weight_reorder(plain_weight_, forward_pd_.weights_desc());
    forward_activations_ = activation_reorders(forward_pd_, {DNNL_ARG_SRC}, {DNNL_ARG_DST});
  }

  const dnnl::memory::desc& src() const { return src_; }
  const dnnl::memory::desc& dst() const { return dst_; }
  const dnnl::memory::desc& plain_weight() const { return plain_weight_; }

  struct Step {
    const dnnl::primitive* primitive;
    dnnl::memory::desc weight;  // the layout the primitive takes (or gives) weights in
    std::optional<dnnl::reorder> weight_reorder;  // plain <-> that layout; none when equal
    dnnl::memory::desc scratchpad;
    const std::vector<ActivationReorder>* activations;  // empty for the direct algorithm
  };

  Step forward() const {
    return {&forward_, forward_pd_.weights_desc(), forward_weight_reorder_,
            forward_pd_.scratchpad_desc(), &forward_activations_};
  }

  Step backward_data() {
    if (!backward_data_) {
      const dnnl::memory::desc any_weight(plain_weight_.dims(), type_, Tag::any);
      backward_data_pd_ = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(algorithm_, primitive_src_, any_weight,
                                                primitive_dst_, stride_, padding_, padding_),
          attr_, cpu_engine(), forward_pd_);
      backward_data_ = dnnl::convolution_backward_data(backward_data_pd_);
      backward_data_weight_reorder_ =
          weight_reorder(plain_weight_, backward_data_pd_.weights_desc());
      backward_data_activations_ =
          activation_reorders(backward_data_pd_, {DNNL_ARG_DIFF_DST}, {DNNL_ARG_DIFF_SRC});
    }
    return {&*backward_data_, backward_data_pd_.weights_desc(), backward_data_weight_reorder_,
            backward_data_pd_.scratchpad_desc(), &backward_data_activations_};
  }

  Step backward_weights() {
    if (!backward_weights_) {
      const dnnl::memory::desc any_weight(plain_weight_.dims(), type_, Tag::any);
      backward_weights_pd_ = dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(algorithm_, primitive_src_, any_weight,
                                                   primitive_dst_, stride_, padding_, padding_),
          attr_, cpu_engine(), forward_pd_);
      backward_weights_ = dnnl::convolution_backward_weights(backward_weights_pd_);
      backward_weights_reorder_ =
          weight_reorder(backward_weights_pd_.diff_weights_desc(), plain_weight_);
      backward_weights_activations_ =
          activation_reorders(backward_weights_pd_, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST}, {});
    }
    return {&*backward_weights_, backward_weights_pd_.diff_weights_desc(),
            backward_weights_reorder_, backward_weights_pd_.scratchpad_desc(),
            &backward_weights_activations_};
  }

 private:
  static std::optional<dnnl::reorder> weight_reorder(const dnnl::memory::desc& from,
                                                     const dnnl::memory::desc& to) {
    if (from == to) return std::nullopt;
    return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
  }

  // The reorders of the activation operands `pd` takes in another layout than channels-last.
  std::vector<ActivationReorder> activation_reorders(const dnnl::primitive_desc_base& pd,
                                                     std::initializer_list<int> inputs,
                                                     std::initializer_list<int> outputs) const {
    std::vector<ActivationReorder> reorders;
    const auto add = [&](int arg, bool input) {
      const dnnl::memory::desc& plain =
          arg == DNNL_ARG_SRC || arg == DNNL_ARG_DIFF_SRC ? src_ : dst_;
      const dnnl::memory::desc inner = pd.query_md(dnnl::query::exec_arg_md, arg);
      if (inner == plain) return;
      reorders.push_back({arg, inner,
                          dnnl::reorder(dnnl::reorder::primitive_desc(
                              cpu_engine(), input ? plain : inner, cpu_engine(),
                              input ? inner : plain)),
                          input});
    };
    for (const int arg : inputs) add(arg, true);
    for (const int arg : outputs) add(arg, false);
    return reorders;
  }

  DataType type_;
  dnnl::algorithm algorithm_;
  dnnl::memory::desc src_, dst_, plain_weight_;
  dnnl::memory::desc primitive_src_, primitive_dst_;  // src_, dst_, or `any` for Winograd
  dims stride_, padding_;
  dnnl::primitive_attr attr_;
  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_forward forward_;
  std::optional<dnnl::reorder> forward_weight_reorder_;
  std::vector<ActivationReorder> forward_activations_, backward_data_activations_,
      backward_weights_activations_;
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
  using Key = std::array<std::int64_t, 12>;
  thread_local std::map<Key, std::unique_ptr<ConvPrimitives>> made;
  const Key key{g.batch,    g.in_channels, g.out_channels, g.height,
                g.width,    g.kernel_h,    g.kernel_w,     g.stride,
                g.padding,  at::get_num_threads(), static_cast<std::int64_t>(g.type),
                static_cast<std::int64_t>(g.algorithm)};
  auto found = made.find(key);
  if (found == made.end()) found = made.emplace(key, std::make_unique<ConvPrimitives>(g)).first;
  return *found->second;
}

// The primitives of g, where Winograd is asked for only if oneDNN has all three of them here
// (onednn_winograd_available); an InternalError naming the caller otherwise.
ConvPrimitives& checked_primitives_for(const Geometry& g, const char* caller) {
  try {
    ConvPrimitives& p = primitives_for(g);
    if (g.algorithm == OnednnConvAlgorithm::kWinograd) {
      p.backward_data();
      p.backward_weights();
    }
    return p;
  } catch (const dnnl::error& e) {
    throw InternalError(std::string(caller) +
                        (g.algorithm == OnednnConvAlgorithm::kWinograd
                             ? ": oneDNN has no Winograd convolution of this shape on this CPU "
                               "(check onednn_winograd_available first): "
                             : ": oneDNN made no convolution primitive of this shape: ") +
                        e.what());
  }
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
  // Activations in the primitive's own layouts (Winograd): inputs reordered in now, outputs
  // out after the primitive.
  std::vector<at::Tensor> inner_buffers;
  std::vector<std::pair<const ActivationReorder*, dnnl::memory>> outputs;  // with the caller's
  for (const ActivationReorder& a : *step.activations) {
    inner_buffers.push_back(
        at::empty({static_cast<std::int64_t>(a.inner.get_size()) + 1}, at::kByte));
    dnnl::memory inner = wrap(a.inner, inner_buffers.back());
    dnnl::memory& caller = args.at(a.arg);
    if (a.input) {
      a.reorder.execute(stream, caller, inner);
    } else {
      outputs.emplace_back(&a, caller);
    }
    caller = inner;
  }
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
  for (auto& [a, caller] : outputs) a->reorder.execute(stream, args.at(a->arg), caller);
  stream.wait();
}

#endif

}  // namespace

bool onednn_winograd_available(at::IntArrayRef input_sizes, at::IntArrayRef weight_sizes,
                               std::int64_t stride, std::int64_t padding) {
#if LPDT_HAVE_DNNL
  const Geometry g =
      geometry_of(input_sizes, weight_sizes, stride, padding, at::kFloat,
                  OnednnConvAlgorithm::kWinograd, "onednn_winograd_available");
  try {
    ConvPrimitives& p = primitives_for(g);
    p.backward_data();  // oneDNN may have a forward kernel and no backward one
    p.backward_weights();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
#else
  return false;
#endif
}

at::Tensor onednn_conv2d_forward(const at::Tensor& x, const at::Tensor& weight_in,
                                 std::int64_t stride, std::int64_t padding,
                                 OnednnConvAlgorithm algorithm) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_forward", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_forward";
  check_input(x, kCaller);
  check_float_cpu(weight_in, kCaller, "weight");
  const Geometry g =
      geometry_of(x.sizes(), weight_in.sizes(), stride, padding, x.scalar_type(), algorithm,
                  kCaller);
  const at::Tensor y = at::empty({g.batch, g.out_channels, g.out_height(), g.out_width()},
                                 x.options().memory_format(at::MemoryFormat::ChannelsLast));
#if LPDT_HAVE_DNNL
  const at::Tensor weight = weight_in.to(g.type).contiguous();
  ConvPrimitives& p = checked_primitives_for(g, kCaller);
  run(p.forward(), p.plain_weight(), weight, /*weight_is_output=*/false,
      {{DNNL_ARG_SRC, wrap(p.src(), x)}, {DNNL_ARG_DST, wrap(p.dst(), y)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return y;
}

at::Tensor onednn_conv2d_input_grad(const at::Tensor& gy_in, const at::Tensor& weight_in,
                                    at::IntArrayRef input_sizes, std::int64_t stride,
                                    std::int64_t padding, OnednnConvAlgorithm algorithm) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_input_grad", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_input_grad";
  check_float_cpu(weight_in, kCaller, "weight");
  const Geometry g =
      geometry_of(input_sizes, weight_in.sizes(), stride, padding, gy_in.scalar_type(), algorithm,
                  kCaller);
  check_output_gradient(gy_in, g, kCaller);
  LPDT_CHECK(g.type == at::kFloat || onednn_bf16_conv_fast(),
             std::string(kCaller) + ": bfloat16 operands need a CPU with AVX-512");
  const at::Tensor dx =
      at::empty(input_sizes, gy_in.options().memory_format(at::MemoryFormat::ChannelsLast));
#if LPDT_HAVE_DNNL
  const at::Tensor gy = gy_in.contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor weight = weight_in.to(g.type).contiguous();
  ConvPrimitives& p = checked_primitives_for(g, kCaller);
  run(p.backward_data(), p.plain_weight(), weight, /*weight_is_output=*/false,
      {{DNNL_ARG_DIFF_DST, wrap(p.dst(), gy)}, {DNNL_ARG_DIFF_SRC, wrap(p.src(), dx)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return dx;
}

at::Tensor onednn_conv2d_weight_grad(const at::Tensor& gy_in, const at::Tensor& x,
                                     at::IntArrayRef weight_sizes, std::int64_t stride,
                                     std::int64_t padding, OnednnConvAlgorithm algorithm) {
  RECORD_FUNCTION("lpdt::onednn_conv2d_weight_grad", std::vector<c10::IValue>());
  constexpr const char* kCaller = "onednn_conv2d_weight_grad";
  check_input(x, kCaller);
  const Geometry g =
      geometry_of(x.sizes(), weight_sizes, stride, padding, x.scalar_type(), algorithm, kCaller);
  check_output_gradient(gy_in, g, kCaller);
  const at::Tensor dw = at::empty(weight_sizes, x.options());
#if LPDT_HAVE_DNNL
  const at::Tensor gy = as_operand(gy_in, g.type);
  ConvPrimitives& p = checked_primitives_for(g, kCaller);
  run(p.backward_weights(), p.plain_weight(), dw, /*weight_is_output=*/true,
      {{DNNL_ARG_SRC, wrap(p.src(), x)}, {DNNL_ARG_DIFF_DST, wrap(p.dst(), gy)}});
#else
  refuse_without_onednn(kCaller);
#endif
  return dw;
}

}  // namespace lpdt
