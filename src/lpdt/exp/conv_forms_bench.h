#pragma once
// `lpdt bench --conv-forms`: for every stride-1 "same" convolution shape of a model, oneDNN's
// forward kernel (at::conv2d) against the backward-data form of the same convolution
// (nn/same_conv_by_backward_data.h), timed in alternating order in one process on the same
// tensors, with the largest difference of their outputs; and the same for the integer backend's
// float convolutions of each shape (quant/exact_float_conv.h), whose two forms must agree exactly.
// The fp32 layer and the integer backend take the backward-data form on AVX2 CPUs, where this
// benchmark measured it faster (docs/benchmarks.md, "AVX2 CPUs" items 11 and 12); the table says
// whether it would help on another CPU. On AVX2 CPUs the integer backend's sums come from its own
// int16 pair-product kernel instead (quant/int16_pair_conv.h, item 14), timed against both float
// forms in the same rounds. Then, for every one-group convolution shape of the model (strided
// ones too), a training step's three float32 convolutions (forward, input and weight gradients)
// through LibTorch's calls against oneDNN's primitives called directly (core/onednn_float_conv.h,
// what the fp32 layer runs), alternating, with the largest relative difference of the results.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::exp {

struct ConvFormsBenchOptions {
  std::string arch = "resnet";
  std::int64_t depth = 20;
  std::int64_t batch_size = 32;
  std::int64_t channels = 1;
  std::int64_t size = 32;
  int threads = 0;
  std::int64_t rounds = 20;  // timed calls of each form per shape (median reported)
  std::int64_t warmup_rounds = 2;
  std::string json_path;
};

struct ConvFormsRow {
  std::int64_t in_channels = 0, out_channels = 0, height = 0, width = 0, kernel = 0;
  std::int64_t layers = 0;        // the model's convolutions of this shape
  double forward_ms = 0;          // at::conv2d, median
  double backward_data_ms = 0;    // the backward-data form, median
  double speedup = 0;             // forward_ms / backward_data_ms
  double max_abs_difference = 0;  // between the two outputs
  // The integer backend's float sums of the same shape (quant/exact_float_conv.h), both forms.
  double integer_forward_ms = 0;
  double integer_backward_data_ms = 0;
  double integer_speedup = 0;
  double integer_max_abs_difference = 0;  // 0 unless the sums were not exact
  // The int16 pair-product kernel's sums of the same shape, where this CPU runs it (AVX2);
  // speedup against the faster float form; difference from the float forms' sums (0 when exact).
  bool int16_pairs_run = false;
  double int16_pairs_ms = 0;
  double int16_pairs_speedup = 0;
  double int16_pairs_max_abs_difference = 0;
};

// One convolution shape's training-step convolutions, LibTorch's calls against the direct
// primitives.
struct DirectConvRow {
  std::int64_t in_channels = 0, out_channels = 0, height = 0, width = 0, kernel = 0, stride = 0;
  std::int64_t layers = 0;
  // Whether the step computes this convolution's input gradient: not for the network's first
  // weighted layer (the stem), whose input is the data.
  bool input_gradient = true;
  // Whether the fp32 layer takes the direct primitives for this shape (onednn_float_conv_applies:
  // not for one input channel); where not, the step's total counts LibTorch's time for it.
  bool layer_takes_direct = true;
  // at::convolution + at::convolution_backward (input where input_gradient, and weight), median
  double libtorch_ms = 0;
  double direct_ms = 0;  // the same by the direct primitives, median
  double speedup = 0;      // libtorch_ms / direct_ms
  double max_relative_difference = 0;  // over the output and both gradients
  // The same three convolutions by oneDNN's Winograd primitives (activations reordered into and
  // out of their blocked layouts), timed alternating with the direct ones, where oneDNN has
  // them (3x3 stride 1 on AVX-512 CPUs): medians of that alternation, and the largest
  // difference from the direct results relative to their largest magnitude.
  bool winograd_run = false;
  double winograd_direct_ms = 0, winograd_ms = 0, winograd_speedup = 0;
  double winograd_max_relative_difference = 0;
};

// Rows for the shapes the backward-data form handles, then (in `progress`) a line with both
// forms' time for one forward pass of the model's handled convolutions; then the direct
// primitives' rows (in `direct_rows` where given) and a line for one training step's
// convolutions. Where this build has no oneDNN to call, that second table is left out.
std::vector<ConvFormsRow> run_conv_forms_bench(
    const ConvFormsBenchOptions& options, const std::function<void(const std::string&)>& progress,
    std::vector<DirectConvRow>* direct_rows = nullptr);

}  // namespace lpdt::exp
