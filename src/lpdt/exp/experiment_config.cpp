#include "lpdt/exp/experiment_config.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"
#include "lpdt/graph/factory.h"
#include "lpdt/models/model.h"

namespace lpdt {
namespace {

// eval.gossip_rounds beyond this is a typo, not a protocol: the official code runs 50.
constexpr std::int64_t kMaxGossipRounds = 100000;
// run.receive_timeout_s: below 10 ms no round's messages arrive in time, and a healthy peer would
// be taken for dead; above a week the deadlines (3x for rank 0's gathers) stop being a bound.
constexpr double kMinReceiveTimeoutS = 0.01;
constexpr double kMaxReceiveTimeoutS = 7 * 24 * 3600.0;
// Rates the step applies as float32 scalars must be float32 numbers.
constexpr double kLargestFloat32 = 3.4028234663852886e38;

template <ConfigEnum E>
std::vector<std::string> choices() {
  std::vector<std::string> out;
  for (const std::string_view name : config_names<E>()) out.emplace_back(name);
  return out;
}

template <ConfigEnum E>
std::string name_of(E value) {
  return std::string(to_string(value));
}

// "\"none\"": a string value as it is written in TOML, for messages.
std::string toml_string(std::string_view text) { return format_config_value(std::string(text)); }

// The side of a dataset's square images (before data.pad_to); imagenette: data.image_size, 0
// meaning imagenette2-160's 160 (data::kImagenetteDefaultSize).
std::int64_t image_side(const std::string& dataset, std::int64_t synthetic_size,
                        std::int64_t image_size = 0) {
  if (dataset == "fashion-mnist" || dataset == "mnist") return 28;
  if (dataset == "cifar10" || dataset == "cifar100") return 32;
  if (dataset == "imagenette") return image_size > 0 ? image_size : 160;
  return synthetic_size;
}

// Channels of the first stage, which norm groups must divide (ResNet for CIFAR: 16; VGG-11: 64).
std::optional<std::int64_t> first_stage_channels(const std::string& arch) {
  if (arch == "resnet") return 16;
  if (arch == "vgg11" || arch == "resnet18" || arch == "resnet34") return 64;
  return std::nullopt;
}

bool valid_resnet_depth(std::int64_t depth) {
  // 6n+2 with n >= 1 blocks per stage; 54 is the paper's "ResNet-54", which the official code
  // builds with n = int((54 - 2) / 6) = 8.
  return (depth >= 8 && (depth - 2) % 6 == 0) || depth == 54;
}

// Every field of ExperimentConfig, with its key. The one list that ties the struct to the schema:
// reading (Config -> struct) and writing (struct -> Config) both go through it, and
// experiment_schema() checks that it names every key exactly once.
template <typename Experiment, typename Visitor>
void visit_fields(Experiment& c, Visitor&& v) {
  v("run.name", c.run.name);
  v("run.out_dir", c.run.out_dir);
  v("run.seed", c.run.seed);
  v("run.device", c.run.device);
  v("run.threads", c.run.threads);
  v("run.epochs", c.run.epochs);
  v("run.eval_every", c.run.eval_every);
  v("run.checkpoint_every", c.run.checkpoint_every);
  v("run.log_every", c.run.log_every);
  v("run.max_steps_per_epoch", c.run.max_steps_per_epoch);
  v("run.nodes_per_pass", c.run.nodes_per_pass);
  v("run.pass_workers", c.run.pass_workers);
  v("run.cuda_graph", c.run.cuda_graph);
  v("run.receive_timeout_s", c.run.receive_timeout_s);

  v("data.dataset", c.data.dataset);
  v("data.dir", c.data.dir);
  v("data.partition", c.data.partition);
  v("data.skew", c.data.skew);
  v("data.skew_mode", c.data.skew_mode);
  v("data.dirichlet_alpha", c.data.dirichlet_alpha);
  v("data.dirichlet_min_samples", c.data.dirichlet_min_samples);
  v("data.shards_per_node", c.data.shards_per_node);
  v("data.batch_size", c.data.batch_size);
  v("data.augment", c.data.augment);
  v("data.crop_padding", c.data.crop_padding);
  v("data.pad_to", c.data.pad_to);
  v("data.eval_batch_size", c.data.eval_batch_size);
  v("data.test_subset", c.data.test_subset);
  v("data.synthetic_samples_per_class", c.data.synthetic_samples_per_class);
  v("data.synthetic_size", c.data.synthetic_size);
  v("data.image_size", c.data.image_size);
  v("data.crop_size", c.data.crop_size);
  v("data.on_device", c.data.on_device);
  v("data.vocab", c.data.vocab);
  v("data.max_length", c.data.max_length);

  v("model.arch", c.model.arch);
  v("model.depth", c.model.depth);
  v("model.norm", c.model.norm);
  v("model.groups", c.model.groups);
  v("model.pretrained", c.model.pretrained);
  v("model.transformer_hidden", c.model.transformer_hidden);
  v("model.transformer_layers", c.model.transformer_layers);
  v("model.transformer_heads", c.model.transformer_heads);
  v("model.transformer_ffn", c.model.transformer_ffn);
  v("model.dropout", c.model.dropout);
  v("model.precision", c.model.precision);
  v("model.residual_init", c.model.residual_init);

  v("quant.backend", c.quant.backend);
  v("quant.scheme", c.quant.scheme);
  v("quant.bits", c.quant.bits);
  v("quant.grad_bits", c.quant.grad_bits);
  v("quant.weight_grad", c.quant.weight_grad);
  v("quant.eval_rounding", c.quant.eval_rounding);
  v("quant.range_momentum", c.quant.range_momentum);
  v("quant.range_evonorm", c.quant.range_evonorm);
  v("quant.range_state", c.quant.range_state);

  v("graph.topology", c.graph.topology);
  v("graph.nodes", c.graph.nodes);
  v("graph.mixing", c.graph.mixing);
  v("graph.torus_rows", c.graph.torus_rows);
  v("graph.random_out_degree", c.graph.random_out_degree);

  v("algo.name", c.algo.name);
  v("algo.consensus_step", c.algo.consensus_step);
  v("algo.compressor", c.algo.compressor);
  v("algo.keep_fraction", c.algo.keep_fraction);
  v("algo.message_values", c.algo.message_values);
  v("algo.message_rounding", c.algo.message_rounding);
  v("algo.qgm", c.algo.qgm);
  v("algo.choco_init", c.algo.choco_init);

  v("optim.lr", c.optim.lr);
  v("optim.optimizer", c.optim.optimizer);
  v("optim.momentum", c.optim.momentum);
  v("optim.nesterov", c.optim.nesterov);
  v("optim.weight_decay", c.optim.weight_decay);
  v("optim.beta1", c.optim.beta1);
  v("optim.beta2", c.optim.beta2);
  v("optim.eps", c.optim.eps);
  v("optim.schedule", c.optim.schedule);
  v("optim.milestones", c.optim.milestones);
  v("optim.gamma", c.optim.gamma);
  v("optim.warmup", c.optim.warmup);

  v("eval.protocol", c.eval.protocol);
  v("eval.gossip_rounds", c.eval.gossip_rounds);
  v("eval.per_node", c.eval.per_node);

  v("ledger.accounting", c.ledger.accounting);

  v("faults.drop_probability", c.faults.drop_probability);
  v("faults.delay_probability", c.faults.delay_probability);
  v("faults.delay_rounds", c.faults.delay_rounds);
  v("faults.kill_nodes", c.faults.kill_nodes);
  v("faults.kill_step", c.faults.kill_step);
}

void add_keys(ConfigSchema& s) {
  const ExperimentConfig d;  // the defaults

  // [run]
  s.add_string("run.name", d.run.name,
               "Name of the run; its folder is run.out_dir/name-YYYYMMDD-HHMMSS, so one folder "
               "name: not empty, at most 200 bytes, no '/', '\\' or control characters.");
  s.add_string("run.out_dir", d.run.out_dir, "Folder that holds the run folders (not empty; \".\" is the current folder).");
  s.add_int("run.seed", static_cast<std::int64_t>(d.run.seed),
            "Root seed; every random stream is derived from (seed, node, purpose).")
      .at_least(0);
  s.add_string("run.device", name_of(d.run.device), "Device that trains the nodes.")
      .one_of(choices<RunConfig::Device>());
  s.add_int("run.threads", d.run.threads,
            "CPU threads for tensor operations; 0 = the cores this process may use (under "
            "mpirun, shared between the job's processes on the host unless it binds each to its "
            "own; more threads than cores share them and wait on each other: the run warns).")
      .at_least(0)
      .at_most(static_cast<double>(kMaxThreads));
  s.add_int("run.epochs", d.run.epochs, "Training epochs (passes over each node's partition).")
      .at_least(1);
  s.add_int("run.eval_every", d.run.eval_every,
            "Evaluate every this many epochs (the last epoch is always evaluated).")
      .at_least(1);
  s.add_int("run.checkpoint_every", d.run.checkpoint_every,
            "Write the complete training state to RUN_DIR/checkpoint.lpdt every this many epochs "
            "(and after the last), replacing the previous one atomically; `lpdt train --resume "
            "RUN_DIR` continues bit for bit. 0 = no checkpoints.")
      .at_least(0);
  s.add_int("run.log_every", d.run.log_every,
            "Log the training loss every this many steps; 0 = per-epoch logs only.")
      .at_least(0);
  s.add_int("run.max_steps_per_epoch", d.run.max_steps_per_epoch,
            "Stop each epoch after this many steps, for quick runs; 0 = the full epoch.")
      .at_least(0);
  s.add_float("run.receive_timeout_s", d.run.receive_timeout_s,
              "Multi-process runs (mpirun): seconds a rank waits for a peer's gossip payload "
              "before it takes the peer for dead, drops its edges and goes on (docs/faults.md); "
              "rank 0's gathers wait 3 times as long. Never a hang. From 0.01 s (a round's "
              "messages take longer to arrive) to a week.")
      .at_least(kMinReceiveTimeoutS)
      .at_most(kMaxReceiveTimeoutS);
  s.add_int(
       "run.nodes_per_pass", d.run.nodes_per_pass,
       "Nodes per forward/backward pass of the node-batched engine; 0 = automatic (on "
       "the CPU as many as keep a pass's saved activations within 32 MiB, 1 to 16: "
       "ResNet-20 1, LeNet-5 16; all nodes on a GPU). The result does not depend on it, up to the "
       "last bits of float sums between a pass of one node and passes of several (other "
       "convolution kernels), and on AVX2-only CPUs between any two pass sizes (docs/mpi.md).")
      .at_least(0);
  s.add_int(
       "run.pass_workers", d.run.pass_workers,
       "CPU: worker threads that run the engine's passes side by side, each at one intra-op "
       "thread; 1 = passes in turn on run.threads threads; 0 = automatic (one per intra-op "
       "thread when a step has several passes; 1 on a GPU and for models with dropout). Results "
       "equal those of passes in turn at one thread, bit for bit. Evaluation runs its passes (a "
       "node on a test batch each) on as many workers (for 0: one per intra-op thread), except "
       "for models with dropout, whose passes run in turn.")
      .at_least(0)
      .at_most(static_cast<double>(kMaxThreads));
  s.add_string(
       "run.cuda_graph", name_of(d.run.cuda_graph),
       "On a GPU, capture the training step (forward, backward, optimizer, gossip) as a "
       "CUDA graph, one per learning-rate value, and replay it: auto = when the step "
       "allows it (a float32 model, or an 8-bit one in a build with the CUDA kernels; static "
       "topology, dense messages or top-k with reference "
       "byte accounting, no stochastically rounded int8 messages, a constant or multistep "
       "schedule, optim.optimizer = sgd, no injected faults and no dead nodes; the log says "
       "why not otherwise), off = always run "
       "the step eagerly.")
      .one_of(choices<RunConfig::CudaGraph>());

  // [data]
  s.add_string("data.dataset", name_of(d.data.dataset),
               "Dataset; synthetic = generated class blobs, no files needed.")
      .one_of(choices<DataConfig::Dataset>());
  s.add_string("data.dir", d.data.dir,
               "Folder of the dataset's files; \"\" = the default location (Fashion-MNIST: "
               "/usr/share/datasets/fashion-mnist; mnist, cifar, imagenette, ag-news and sentlen "
               "need a folder; synthetic and synthetic-text need none).");
  s.add_string("data.partition", name_of(d.data.partition),
               "How the training set is split over the nodes (non-IID: skew, dirichlet, shards).")
      .one_of(choices<DataConfig::Partition>());
  s.add_float("data.skew", d.data.skew,
              "Degree of skew of the skew partition: 0 = IID, 1 = each node sees few classes.")
      .at_least(0)
      .at_most(1);
  s.add_string("data.skew_mode", name_of(d.data.skew_mode),
               "Skew partition algorithm: lpdt, or reference = the official code's exact "
               "partition.")
      .one_of(choices<DataConfig::SkewMode>());
  s.add_float("data.dirichlet_alpha", d.data.dirichlet_alpha,
              "Concentration of the dirichlet partition; smaller = more skewed (at 1e6 the shares "
              "are equal to 0.1%, and a node's samples of a class are within one of an equal "
              "split, as the cut points round; larger values overflow the Gamma draws).")
      .greater_than(0)
      .at_most(1e6);
  s.add_int("data.dirichlet_min_samples", d.data.dirichlet_min_samples,
            "Least training samples of every node in the dirichlet partition; a draw that gives "
            "a node fewer is redrawn (up to 100 times).")
      .at_least(1);
  s.add_int("data.shards_per_node", d.data.shards_per_node,
            "Label-sorted shards per node for the shards partition.")
      .at_least(1);
  s.add_int("data.batch_size", d.data.batch_size,
            "Training batch per node (the official code's global batch 256 over 8 nodes = 32).")
      .at_least(1);
  s.add_bool("data.augment", d.data.augment,
             "Random crop (with data.crop_padding) and horizontal flip of training images.");
  s.add_int("data.crop_padding", d.data.crop_padding,
            "Zero padding on each side before the random crop of data.augment; at most the "
            "images' side.")
      .at_least(0);
  s.add_int("data.pad_to", d.data.pad_to,
            "Zero-pad images to this side (32 gives Fashion-MNIST CIFAR-shaped inputs); 0 = off.")
      .at_least(0)
      .at_most(static_cast<double>(kLargestImageSide));
  s.add_int("data.eval_batch_size", d.data.eval_batch_size, "Batch size of evaluation.")
      .at_least(1);
  s.add_int("data.test_subset", d.data.test_subset,
            "Evaluate on the first N test images only (at most the test set's size); 0 = the full "
            "test set.")
      .at_least(0);
  s.add_int("data.synthetic_samples_per_class", d.data.synthetic_samples_per_class,
            "Training samples per class of the synthetic dataset.")
      .at_least(1);
  s.add_int("data.synthetic_size", d.data.synthetic_size,
            "Image side of the synthetic dataset (3 channels, 10 classes).")
      .at_least(1)
      .at_most(static_cast<double>(kLargestImageSide));
  s.add_int("data.image_size", d.data.image_size,
            "Imagenette: side S of the stored images (shorter side resized to S, centre crop "
            "S x S, kept as uint8: 9,469 x 3 S^2 bytes, 727 MB at 160); 0 = 160.")
      .at_least(0)
      .at_most(static_cast<double>(kLargestImageSide));
  s.add_int("data.crop_size", d.data.crop_size,
            "Side of the model's inputs: with data.augment a RandomResizedCrop to this side "
            "replaces the padded random crop, evaluation resizes the shorter side to "
            "crop_size / 0.875 and takes the centre crop; 0 = off (imagenette then crops "
            "randomly to its stored size and evaluates the stored images).")
      .at_least(0)
      .at_most(static_cast<double>(kLargestImageSide));
  s.add_string("data.on_device", name_of(d.data.on_device),
               "Where training batches are made: on = gathered, augmented and normalised on "
               "run.device with tensor operations (the training set copied there once as uint8; "
               "on a GPU a few kernels per step and no host synchronisation); off = on the host, "
               "prepared ahead on a loader thread and copied; auto = on for run.device = 'cuda' "
               "unless data.crop_size or imagenette asks for the resized crops, which run on "
               "the CPU only. The batches are the same either way.")
      .one_of(choices<DataConfig::OnDevice>());
  s.add_string("data.vocab", d.data.vocab,
               "Text datasets: the WordPiece vocab.txt of the tokenizer (the pretrained model's); "
               "\"\" = synthetic-text's own vocabulary.");
  s.add_int("data.max_length", d.data.max_length,
            "Text datasets: tokens per sequence, [CLS] and [SEP] included (longer texts are cut, "
            "shorter ones padded; at most 512 with model.arch = distilbert).")
      .at_least(3);

  // [model]
  s.add_string("model.arch", name_of(d.model.arch), "Network architecture.")
      .one_of(choices<ModelConfig::Arch>());
  s.add_int("model.depth", d.model.depth,
            "ResNet depth 6n+2 (n blocks per stage): 20, 32, 44, 56, 110, up to 1202 (He et "
            "al.'s deepest); 54 = the paper's ResNet-54 (n = 8).")
      .at_least(1)
      .at_most(models::kDeepestCifarResNet);
  s.add_string("model.norm", name_of(d.model.norm),
               "Normalisation layers of the ResNets, MobileNetV2 and VGG-11 (LeNet-5 and the MLP "
               "have none, the transformers LayerNorm: for them it changes nothing, and the run "
               "records \"none\").")
      .one_of(choices<ModelConfig::Norm>());
  s.add_int("model.groups", d.model.groups,
            "Channel groups of EvoNorm-S0, Range EvoNorm and GroupNorm.")
      .at_least(1);
  s.add_string("model.pretrained", d.model.pretrained,
               "Initial weights from a safetensors file, by parameter name (transformers: a "
               "Hugging Face DistilBERT model.safetensors; docs/pretrained.md); \"\" = random "
               "initialisation.");
  s.add_int("model.transformer_hidden", d.model.transformer_hidden,
            "arch transformer: hidden size (distilbert: 768).")
      .at_least(1);
  s.add_int("model.transformer_layers", d.model.transformer_layers,
            "arch transformer: encoder layers (distilbert: 6).")
      .at_least(1)
      .at_most(models::kMostTransformerLayers);
  s.add_int("model.transformer_heads", d.model.transformer_heads,
            "arch transformer: attention heads, dividing the hidden size (distilbert: 12).")
      .at_least(1);
  s.add_int("model.transformer_ffn", d.model.transformer_ffn,
            "arch transformer: feed-forward hidden size (distilbert: 3072).")
      .at_least(1);
  s.add_float("model.dropout", d.model.dropout,
              "Transformers: dropout on embeddings, attention probabilities, feed-forward outputs "
              "and the head (DistilBERT: 0.1).")
      .at_least(0)
      .less_than(1);
  s.add_string("model.precision", name_of(d.model.precision),
               "fp32; bf16: fp32 with bfloat16 convolutions (inputs and weights rounded to "
               "bfloat16, float32 sums; parameters, gradients, optimizer and norms float32; "
               "fast on CPUs with AVX-512 BF16 or AMX and on GPUs; without AVX-512, oneDNN's "
               "reference kernels, about 16x slower than fp32, and a run warns); or int8: the "
               "paper's 8-bit training (weights, activations and layer gradients quantized; "
               "evonorm becomes Range EvoNorm, batchnorm Range BatchNorm).")
      .one_of(choices<ModelConfig::Precision>());
  s.add_string("model.residual_init", name_of(d.model.residual_init),
               "gamma of the last norm of each residual branch at the start (resnet, resnet18/34, "
               "mobilenetv2): reference = the official code (0 in 8-bit models, a zero-initialised "
               "branch; 1 in full precision), one = 1 at every precision (8-bit starts where fp32 "
               "does; docs/quantization.md).")
      .one_of(choices<ModelConfig::ResidualInit>());

  // [quant]
  s.add_string("quant.backend", name_of(d.quant.backend),
               "int8 arithmetic: simulated (quantize-dequantize in float, any device) or integer "
               "(real int8 x int8 -> int32 on the CPU through oneDNN; same function).")
      .one_of(choices<QuantConfig::Backend>());
  s.add_string("quant.scheme", name_of(d.quant.scheme),
               "gemmlowp (range widened to contain 0, integer zero point) or reference (the "
               "official code's min/max formula; simulated backend only).")
      .one_of(choices<QuantConfig::Scheme>());
  s.add_int("quant.bits", d.quant.bits, "Bits of weights, activations and normaliser scales.")
      .at_least(2)
      .at_most(16);
  s.add_int("quant.grad_bits", d.quant.grad_bits,
            "Bits of the layer gradients passed backwards (gradient bifurcation).")
      .at_least(2)
      .at_most(16);
  s.add_string("quant.weight_grad", name_of(d.quant.weight_grad),
               "Precision of the weight gradients of convolutions and linear layers (the paper: "
               "16- or 32-bit float): fp32 (the official code) or bf16 (the output gradient and "
               "the layer's input rounded to bfloat16, float32 sums, the gradient rounded to "
               "bfloat16: oneDNN's bfloat16 kernels on CPUs with AMX or AVX-512 BF16, cuDNN's on "
               "GPUs; a CPU without AVX-512 runs reference kernels, and a run warns). The layer "
               "gradients stay at quant.grad_bits. docs/quantization.md.")
      .one_of(choices<QuantConfig::WeightGrad>());
  s.add_string("quant.eval_rounding", name_of(d.quant.eval_rounding),
               "Activation rounding in evaluation: nearest (deterministic) or stochastic (the "
               "official code).")
      .one_of(choices<QuantConfig::Rounding>());
  s.add_float("quant.range_momentum", d.quant.range_momentum,
              "Weight of the newest batch in the running activation ranges used in evaluation "
              "(the official code: 0.9).")
      .greater_than(0.0)
      .at_most(1.0);
  s.add_string("quant.range_evonorm", name_of(d.quant.range_evonorm),
               "Range EvoNorm variant: reference (official code: mean of 16 chunk ranges, "
               "Banner's constant), paper (eq. 5: one range per group, 1/sqrt(2 ln(c/g))) or std "
               "(EvoNorm-S0's group standard deviation in place of the range; the same quantizers "
               "and hard sigmoid).")
      .one_of(choices<QuantConfig::RangeEvonorm>());
  s.add_string("quant.range_state", name_of(d.quant.range_state),
               "Running activation ranges: buffer (per node, not gossiped) or param (the official "
               "code: non-trainable parameters, gossiped and counted in the bytes sent).")
      .one_of(choices<QuantConfig::RangeState>());

  // [graph]
  s.add_string("graph.topology", name_of(d.graph.topology),
               "Communication graph (directed: directed-ring, exponential, random, "
               "one-peer-exponential).")
      .one_of(choices<GraphConfig::Topology>());
  s.add_int("graph.nodes", d.graph.nodes,
            "Number of nodes (at most 4,096: the mixing matrix is dense, and its spectral gap an "
            "n^3 eigendecomposition).")
      .at_least(1)
      .at_most(graph::kMaxNodes);
  s.add_string("graph.mixing", name_of(d.graph.mixing),
               "Mixing weights: uniform over each node's out-neighbours and itself "
               "(column-stochastic, as the official code), or metropolis (undirected "
               "graphs only).")
      .one_of(choices<GraphConfig::Mixing>());
  s.add_int("graph.torus_rows", d.graph.torus_rows,
            "Rows of the torus (must divide graph.nodes); 0 = the most square shape.")
      .at_least(0);
  s.add_int("graph.random_out_degree", d.graph.random_out_degree,
            "Out-neighbours per node of the random topology.")
      .at_least(1);

  // [algo]
  s.add_string("algo.name", name_of(d.algo.name), "Decentralized algorithm.")
      .one_of(choices<AlgoConfig::Name>());
  s.add_float("algo.consensus_step", d.algo.consensus_step,
              "Consensus step size: the paper's gamma, the official code's --eta.")
      .greater_than(0)
      .at_most(1);
  s.add_string("algo.compressor", name_of(d.algo.compressor),
               "Compression of the gossiped messages (deep-squeeze and choco only).")
      .one_of(choices<AlgoConfig::Compressor>());
  s.add_float("algo.keep_fraction", d.algo.keep_fraction,
              "Fraction of each tensor's entries sent by topk / randomk (official --k = 1 - this).")
      .greater_than(0)
      .at_most(1);
  s.add_string("algo.message_values", name_of(d.algo.message_values),
               "How the kept values of every message travel (docs/wire.md): fp32, bf16 (rounded "
               "to nearest even), or int8 codes with a scale and zero point per layer. The "
               "sender's algorithm sees the rounded values (deep-squeeze and choco only).")
      .one_of(choices<AlgoConfig::MessageValues>());
  s.add_string("algo.message_rounding", name_of(d.algo.message_rounding),
               "Rounding of int8 message values: stochastic (unbiased, the paper's 8-bit "
               "communication) or nearest.")
      .one_of(choices<QuantConfig::Rounding>());
  s.add_bool("algo.qgm", d.algo.qgm,
             "Quasi-global momentum (Lin et al. 2021) instead of local Nesterov momentum.");
  s.add_string("algo.choco_init", name_of(d.algo.choco_init),
               "Initial public copies x-hat of Choco-SGD: zero (the official code) or the model.")
      .one_of(choices<AlgoConfig::ChocoInit>());

  // [optim]
  s.add_float("optim.lr", d.optim.lr, "Base learning rate.").greater_than(0);
  s.add_string("optim.optimizer", name_of(d.optim.optimizer),
               "Local optimizer of every node: sgd (momentum / Nesterov), adam or adamw "
               "(torch.optim.Adam / AdamW; the paper fine-tunes DistilBERT with Adam). Its state "
               "stays local, never gossiped.")
      .one_of(choices<OptimConfig::Optimizer>());
  s.add_float("optim.momentum", d.optim.momentum, "Momentum (also the beta of QGM; sgd only).")
      .at_least(0)
      .less_than(1);
  s.add_bool("optim.nesterov", d.optim.nesterov, "Nesterov momentum (sgd only).");
  s.add_float("optim.weight_decay", d.optim.weight_decay,
              "Weight decay: L2 added to the gradient (sgd, adam) or decoupled, z *= 1 - lr wd "
              "(adamw).")
      .at_least(0);
  s.add_float("optim.beta1", d.optim.beta1,
              "Adam / AdamW decay of the first moment m (the paper: 0.9).")
      .at_least(0)
      .less_than(1);
  s.add_float("optim.beta2", d.optim.beta2,
              "Adam / AdamW decay of the second moment v (the paper: 0.9; torch: 0.999).")
      .at_least(0)
      .less_than(1);
  s.add_float("optim.eps", d.optim.eps, "Adam / AdamW term added to sqrt(v-hat).").greater_than(0);
  s.add_string("optim.schedule", name_of(d.optim.schedule), "Learning-rate schedule over epochs.")
      .one_of(choices<OptimConfig::Schedule>());
  s.add_int_list("optim.milestones",
                 std::vector<std::int64_t>(d.optim.milestones.begin(), d.optim.milestones.end()),
                 "Epochs at which the multistep schedule multiplies the lr by optim.gamma.")
      .at_least(1);
  s.add_float("optim.gamma", d.optim.gamma, "Factor of the multistep schedule.")
      .greater_than(0)
      .at_most(1);
  s.add_string("optim.warmup", name_of(d.optim.warmup),
               "Warm-up: official = epoch 0 at 0.1 x lr (as the official code), none.")
      .one_of(choices<OptimConfig::Warmup>());

  // [eval]
  s.add_string("eval.protocol", name_of(d.eval.protocol),
               "Final evaluation: average = the averaged model; reference = the official "
               "code's gossip-only rounds, then the mean of the local accuracies.")
      .one_of(choices<EvalConfig::Protocol>());
  s.add_int("eval.gossip_rounds", d.eval.gossip_rounds,
            "Gossip-only rounds before the final evaluation of eval.protocol = reference.")
      .at_least(0)
      .at_most(kMaxGossipRounds);
  s.add_bool("eval.per_node", d.eval.per_node,
             "Also evaluate and report every node's model, each over the whole test split: at "
             "many nodes, where each trains on a few batches an epoch, most of a run's time (a "
             "warning says so when it starts).");

  // [ledger]
  s.add_string("ledger.accounting", name_of(d.ledger.accounting),
               "Byte accounting: lpdt = the bytes of the payloads sent; reference = the "
               "official code's count (the paper's Table 3).")
      .one_of(choices<LedgerConfig::Accounting>());

  // [faults]
  s.add_float("faults.drop_probability", d.faults.drop_probability,
              "Injected fault: each gossip message (one edge, one round) is lost with this "
              "probability and sent again with the next round, which may lose it again (at most "
              "64 times in a row: above 0.9 a warning says how many messages reach that bound); "
              "the receiver mixes without it until it arrives (docs/faults.md).")
      .at_least(0)
      .less_than(1);
  s.add_float("faults.delay_probability", d.faults.delay_probability,
              "Injected fault: each message arrives faults.delay_rounds rounds late with this "
              "probability.")
      .at_least(0)
      .less_than(1);
  s.add_int("faults.delay_rounds", d.faults.delay_rounds,
            "How many rounds late a delayed message arrives (a message still in flight when the "
            "run ends never arrives).")
      .at_least(1)
      .at_most(1000000);
  s.add_int_list("faults.kill_nodes",
                 std::vector<std::int64_t>(d.faults.kill_nodes.begin(), d.faults.kill_nodes.end()),
                 "Injected fault: these nodes die at step faults.kill_step; the survivors drop "
                 "their edges, renormalise and finish. Under mpirun the list must be whole "
                 "ranks' blocks of nodes, not rank 0's, and those processes are killed (run "
                 "mpirun with --enable-recovery so that it lets the others finish); a run "
                 "resumed past faults.kill_step may have other ranks.");
  s.add_int("faults.kill_step", d.faults.kill_step,
            "The gossip round (0-based, counted over the whole run) at which faults.kill_nodes "
            "die: round t is training step t, and eval.protocol = reference's gossip-only "
            "rounds follow the last step.")
      .at_least(0);
}

void add_checks(ConfigSchema& s) {
  using Problem = std::optional<std::string>;

  // The step applies these as float32 scalars: a larger value cannot be one (LibTorch would stop
  // the run with "cannot be converted to type float without overflow", naming no key).
  for (const char* key : {"optim.lr", "optim.weight_decay"}) {
    s.add_check({{key}, [key](const Config& c) -> Problem {
                   const double value = c.get_float(key);
                   if (value > kLargestFloat32) {
                     return std::string(key) + " = " + (std::ostringstream() << value).str() +
                            " is larger than float32's largest number (3.4e38), in which the "
                            "step computes";
                   }
                   return std::nullopt;
                 }});
  }
  // A positive lr below float32's smallest normal number is 0 or a denormal in the step: the
  // model would never move (1e-46 rounds to 0), silently.
  s.add_check({{"optim.lr"}, [](const Config& c) -> Problem {
                 const double lr = c.get_float("optim.lr");
                 if (lr < static_cast<double>(std::numeric_limits<float>::min())) {
                   return "optim.lr = " + (std::ostringstream() << lr).str() +
                          " is below float32's smallest normal number (1.2e-38), in which the "
                          "step computes: the model would not move; expected a rate such as 0.1";
                 }
                 return std::nullopt;
               }});
  // Adam's first step moves by lr / (1 - beta1) (bias correction, 1 - beta1^t at t = 1) and
  // AdamW's decay multiplies by 1 - lr wd, both float32 scalars of the step: each must be a
  // float32 number, or LibTorch stops the run naming no key.
  s.add_check({{"optim.optimizer", "optim.lr", "optim.beta1", "optim.weight_decay"},
               [](const Config& c) -> Problem {
                 const std::string& optimizer = c.get_string("optim.optimizer");
                 if (optimizer == "sgd") return std::nullopt;
                 const double lr = c.get_float("optim.lr");
                 const double beta1 = c.get_float("optim.beta1");
                 const double wd = c.get_float("optim.weight_decay");
                 const auto text = [](double v) { return (std::ostringstream() << v).str(); };
                 if (lr / (1.0 - beta1) > kLargestFloat32) {
                   return "optim.lr / (1 - optim.beta1) = " + text(lr) + " / (1 - " +
                          text(beta1) + ") is larger than float32's largest number (3.4e38): "
                          "Adam's first step moves by it; lower optim.lr or optim.beta1";
                 }
                 if (optimizer == "adamw" && lr * wd > kLargestFloat32) {
                   return "optim.lr * optim.weight_decay = " + text(lr) + " * " + text(wd) +
                          " is larger than float32's largest number (3.4e38): AdamW's decay "
                          "multiplies by 1 - lr wd; lower either";
                 }
                 return std::nullopt;
               }});
  // Adam's eps is added in float32 as well: above float32's largest number it becomes inf and
  // every update m / (sqrt(v) + eps) zero (the model never moves); below its smallest positive
  // normal number it is flushed or lost, and no longer keeps the quotient finite.
  s.add_check({{"optim.eps"}, [](const Config& c) -> Problem {
                 const double eps = c.get_float("optim.eps");
                 if (eps > kLargestFloat32 ||
                     eps < static_cast<double>(std::numeric_limits<float>::min())) {
                   return "optim.eps = " + (std::ostringstream() << eps).str() +
                          " is outside float32's normal range (1.2e-38 to 3.4e38), in which "
                          "the step adds it: expected a small positive number such as 1e-8";
                 }
                 return std::nullopt;
               }});

  // The run folder is run.out_dir/<name>-YYYYMMDD-HHMMSS: the name must be one plain path
  // component, or the folder lands elsewhere ("../x", "/x") or gets an unreadable name.
  s.add_check({{"run.name"}, [](const Config& c) -> Problem {
                 const std::string& name = c.get_string("run.name");
                 const std::string expected =
                     ": expected a name for the run folder, without '/', '\\' or control "
                     "characters (it goes inside run.out_dir)";
                 if (name.empty()) return "run.name is empty" + expected;
                 if (name.size() > kMostRunNameBytes) {
                   return "run.name is " + std::to_string(name.size()) +
                          " bytes long: expected at most " + std::to_string(kMostRunNameBytes) +
                          " (the run folder's name adds a time stamp, and file systems allow "
                          "255 bytes)";
                 }
                 if (name == "." || name == "..") return "run.name = \"" + name + "\"" + expected;
                 for (const char ch : name) {
                   const auto code = static_cast<unsigned char>(ch);
                   if (ch == '/' || ch == '\\' || code < 0x20 || code == 0x7f) {
                     return "run.name contains " +
                            (code < 0x20 || code == 0x7f
                                 ? "the control character " + std::to_string(code)
                                 : std::string("'") + ch + "'") +
                            expected;
                   }
                 }
                 return std::nullopt;
               }});
  s.add_check({{"run.out_dir"}, [](const Config& c) -> Problem {
                 if (c.get_string("run.out_dir").empty()) {
                   return std::string(
                       "run.out_dir is empty: expected the folder that holds the run folders, "
                       "e.g. \"runs\" or \".\" for the current folder");
                 }
                 return std::nullopt;
               }});

  // bf16 rounds convolutions only: on a model without any the run would be fp32 recorded as bf16.
  s.add_check({{"model.precision", "model.arch"}, [](const Config& c) -> Problem {
                 const std::string& arch = c.get_string("model.arch");
                 if (c.get_string("model.precision") == "bf16" &&
                     (arch == "mlp" || arch == "transformer" || arch == "distilbert")) {
                   return "model.precision = \"bf16\" runs convolutions in bfloat16, and "
                          "model.arch = \"" + arch + "\" has none: the run would be fp32. Set "
                          "model.precision = \"fp32\" (or \"int8\")";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"data.skew_mode", "data.partition"}, [](const Config& c) -> Problem {
                 if (c.get_string("data.skew_mode") == "reference" &&
                     c.get_string("data.partition") != "skew") {
                   return "data.skew_mode = \"reference\" reproduces the official skew partition "
                          "and needs data.partition = \"skew\"; set data.partition=skew or "
                          "data.skew_mode=lpdt";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"data.pad_to", "data.dataset", "data.synthetic_size", "data.image_size"},
               [](const Config& c) -> Problem {
                 const std::int64_t pad_to = c.get_int("data.pad_to");
                 const std::string& dataset = c.get_string("data.dataset");
                 const std::int64_t side = image_side(dataset, c.get_int("data.synthetic_size"),
                                                      c.get_int("data.image_size"));
                 if (pad_to != 0 && pad_to < side) {
                   return "data.pad_to = " + std::to_string(pad_to) + " is smaller than the " +
                          std::to_string(side) + "x" + std::to_string(side) + " images of " +
                          dataset +
                          ": expected 0 (no padding) or a side >= " + std::to_string(side);
                 }
                 return std::nullopt;
               }});

  s.add_check(
      {{"data.on_device", "data.dataset", "data.crop_size"}, [](const Config& c) -> Problem {
         const std::string& dataset = c.get_string("data.dataset");
         if (c.get_string("data.on_device") == "on" &&
             (c.get_int("data.crop_size") > 0 || dataset == "imagenette")) {
           return "data.on_device = \"on\" cannot make " + dataset +
                  "'s batches on the device: the random resized crop and the centre "
                  "crop (data.crop_size, imagenette) run on the CPU only; expected "
                  "\"auto\" or \"off\"";
         }
         return std::nullopt;
       }});

  s.add_check({{"data.image_size", "data.dataset"}, [](const Config& c) -> Problem {
                 const std::int64_t image_size = c.get_int("data.image_size");
                 const std::string& dataset = c.get_string("data.dataset");
                 if (image_size != 0 && dataset != "imagenette") {
                   return "data.image_size = " + std::to_string(image_size) +
                          " resizes image folders (imagenette) only; " + dataset +
                          " has a fixed size: expected 0";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"model.arch", "data.dataset"}, [](const Config& c) -> Problem {
                 const std::string arch = c.get_string("model.arch");
                 const std::string dataset = c.get_string("data.dataset");
                 const bool text_model = arch == "distilbert" || arch == "transformer";
                 const bool text_data =
                     dataset == "ag-news" || dataset == "sentlen" || dataset == "synthetic-text";
                 if (text_model && !text_data) {
                   return "model.arch = '" + arch + "' reads token ids: expected a text " +
                          "data.dataset (ag-news, sentlen, synthetic-text), got '" + dataset + "'";
                 }
                 if (text_data && !text_model) {
                   return "data.dataset = '" + dataset + "' is text: expected model.arch = " +
                          "'distilbert' or 'transformer', got '" + arch + "'";
                 }
                 return std::nullopt;
               }});
  // Said before the run folder is made, not at the first forward pass.
  s.add_check({{"data.max_length", "model.arch"}, [](const Config& c) -> Problem {
                 const std::int64_t length = c.get_int("data.max_length");
                 if (c.get_string("model.arch") == "distilbert" && length > kDistilbertPositions) {
                   return "data.max_length = " + std::to_string(length) +
                          " is longer than model.arch = 'distilbert''s " +
                          std::to_string(kDistilbertPositions) +
                          " positions: expected at most " + std::to_string(kDistilbertPositions) +
                          " (or model.arch = 'transformer', which has data.max_length positions)";
                 }
                 return std::nullopt;
               }});
  s.add_check(
      {{"model.transformer_hidden", "model.transformer_heads"}, [](const Config& c) -> Problem {
         const std::int64_t hidden = c.get_int("model.transformer_hidden");
         const std::int64_t heads = c.get_int("model.transformer_heads");
         if (hidden % heads != 0) {
           return "model.transformer_hidden = " + std::to_string(hidden) +
                  " is not divisible by model.transformer_heads = " + std::to_string(heads) +
                  ": expected a multiple of the heads";
         }
         return std::nullopt;
       }});
  s.add_check({{"model.depth", "model.arch"}, [](const Config& c) -> Problem {
                 const std::int64_t depth = c.get_int("model.depth");
                 if (c.get_string("model.arch") == "resnet" && !valid_resnet_depth(depth)) {
                   return "model.depth = " + std::to_string(depth) +
                          " is not a ResNet depth: expected 6n+2 with n >= 1 blocks per stage, "
                          "e.g. 20, 32, 44, 56, 110, or 54 (the paper's ResNet-54, built with "
                          "n = 8 like the official code)";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"quant.backend", "quant.scheme", "quant.bits", "quant.grad_bits"},
               [](const Config& c) -> Problem {
                 if (c.get_string("quant.backend") != "integer") return std::nullopt;
                 if (c.get_string("quant.scheme") != "gemmlowp") {
                   return std::string(
                       "quant.backend = \"integer\" needs quant.scheme = \"gemmlowp\" (its "
                       "kernels take integer codes with an integer zero point, which also makes "
                       "the zero padding of convolutions exact)");
                 }
                 if (c.get_int("quant.bits") != 8 || c.get_int("quant.grad_bits") != 8) {
                   return std::string(
                       "quant.backend = \"integer\" computes with 8-bit codes: set quant.bits "
                       "= 8 and quant.grad_bits = 8, or quant.backend = \"simulated\"");
                 }
                 return std::nullopt;
               }});

  s.add_check({{"model.norm", "model.precision", "model.arch"}, [](const Config& c) -> Problem {
                 if (c.get_string("model.precision") == "int8" &&
                     c.get_string("model.norm") == "groupnorm" &&
                     arch_uses_model_norm(c.get_string("model.arch"))) {
                   return std::string(
                       "model.norm = \"groupnorm\" has no 8-bit version: with model.precision = "
                       "\"int8\" use evonorm or rangeevonorm (Range EvoNorm), batchnorm or rangebatchnorm "
                       "(Range BatchNorm), or none");
                 }
                 return std::nullopt;
               }});

  s.add_check({{"model.groups", "model.norm", "model.arch"}, [](const Config& c) -> Problem {
                 const std::string& norm = c.get_string("model.norm");
                 const std::string& arch = c.get_string("model.arch");
                 const std::int64_t groups = c.get_int("model.groups");
                 const auto channels = first_stage_channels(arch);
                 if ((norm == "evonorm" || norm == "groupnorm" || norm == "rangeevonorm") &&
                     channels && *channels % groups != 0) {
                   std::vector<std::string> divisors;
                   for (std::int64_t d = 1; d <= *channels; ++d) {
                     if (*channels % d == 0) divisors.push_back(std::to_string(d));
                   }
                   std::string list;
                   for (const auto& d : divisors) list += (list.empty() ? "" : ", ") + d;
                   return "model.groups = " + std::to_string(groups) + " does not divide the " +
                          std::to_string(*channels) + " channels of " + arch +
                          "'s first stage: expected one of " + list;
                 }
                 return std::nullopt;
               }});

  s.add_check({{"graph.mixing", "graph.topology"}, [](const Config& c) -> Problem {
                 const std::string& topology = c.get_string("graph.topology");
                 const auto kind = config_enum_from_string<GraphConfig::Topology>(topology);
                 if (c.get_string("graph.mixing") == "metropolis" &&
                     GraphConfig::is_directed(kind.value())) {
                   return "graph.mixing = \"metropolis\" needs an undirected topology (ring, "
                          "torus, complete), but graph.topology = " +
                          toml_string(topology) + " is a directed kind; set graph.mixing=uniform";
                 }
                 return std::nullopt;
               }});

  s.add_check(
      {{"graph.torus_rows", "graph.nodes", "graph.topology"}, [](const Config& c) -> Problem {
         const std::int64_t rows = c.get_int("graph.torus_rows");
         const std::int64_t nodes = c.get_int("graph.nodes");
         if (c.get_string("graph.topology") != "torus") return std::nullopt;
         if (rows != 0 && nodes % rows != 0) {
           return "graph.torus_rows = " + std::to_string(rows) + " does not divide " +
                  "graph.nodes = " + std::to_string(nodes) +
                  ": expected 0 (auto) or a divisor of the number of nodes";
         }
         // With fewer than 3 rows or columns the up and down (left and right) neighbours
         // coincide: not a torus (graph/builders.h).
         if (rows != 0 && (rows < 3 || nodes / rows < 3)) {
           return "graph.torus_rows = " + std::to_string(rows) + " gives a " +
                  std::to_string(rows) + " x " + std::to_string(nodes / rows) +
                  " torus for graph.nodes = " + std::to_string(nodes) +
                  ": expected rows and columns >= 3 (or 0 for the most square shape)";
         }
         if (rows == 0) {
           try {
             graph::most_square_torus(nodes);
           } catch (const ConfigError& e) {
             return std::string(e.what());
           }
         }
         return std::nullopt;
       }});

  // Topologies that need more than one node (a random digraph's Hamiltonian cycle, the
  // one-peer exponential graph's peer).
  s.add_check({{"graph.nodes", "graph.topology"}, [](const Config& c) -> Problem {
                 const std::string& topology = c.get_string("graph.topology");
                 if ((topology == "random" || topology == "one-peer-exponential") &&
                     c.get_int("graph.nodes") < 2) {
                   return "graph.topology = \"" + topology + "\" needs graph.nodes >= 2; got " +
                          std::to_string(c.get_int("graph.nodes"));
                 }
                 return std::nullopt;
               }});

  s.add_check(
      {{"graph.random_out_degree", "graph.nodes", "graph.topology"},
       [](const Config& c) -> Problem {
         const std::int64_t degree = c.get_int("graph.random_out_degree");
         const std::int64_t nodes = c.get_int("graph.nodes");
         if (c.get_string("graph.topology") == "random" && nodes > 1 && degree > nodes - 1) {
           return "graph.random_out_degree = " + std::to_string(degree) + " is more than the " +
                  std::to_string(nodes - 1) + " other nodes: expected an int in [1, " +
                  std::to_string(nodes - 1) + "] for graph.nodes = " + std::to_string(nodes);
         }
         return std::nullopt;
       }});

  s.add_check({{"algo.keep_fraction", "algo.compressor"}, [](const Config& c) -> Problem {
                 const double keep = c.get_float("algo.keep_fraction");
                 if (c.get_string("algo.compressor") == "none" && keep < 1) {
                   return "algo.keep_fraction = " + format_config_value(keep) +
                          " < 1 asks for compression, but algo.compressor = \"none\": set "
                          "algo.compressor=topk or randomk (or algo.keep_fraction=1)";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"algo.message_values", "algo.name"}, [](const Config& c) -> Problem {
                 const std::string& values = c.get_string("algo.message_values");
                 if (values != "fp32" && c.get_string("algo.name") == "dpsgd") {
                   return "algo.message_values = " + toml_string(values) +
                          " rounds the messages, but D-PSGD has no error feedback to absorb the "
                          "rounding error: use algo.name=choco or deep-squeeze, or "
                          "algo.message_values=fp32";
                 }
                 return std::nullopt;
               }});
  s.add_check({{"algo.compressor", "algo.name"}, [](const Config& c) -> Problem {
                 const std::string& compressor = c.get_string("algo.compressor");
                 if (compressor != "none" && c.get_string("algo.name") == "dpsgd") {
                   return "algo.compressor = " + toml_string(compressor) +
                          " needs algo.name = deep-squeeze or choco (D-PSGD gossips full "
                          "models, without error feedback); set algo.name or "
                          "algo.compressor=none";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"optim.optimizer", "algo.qgm"}, [](const Config& c) -> Problem {
                 const std::string& optimizer = c.get_string("optim.optimizer");
                 if (optimizer != "sgd" && c.get_bool("algo.qgm")) {
                   return "optim.optimizer = " + toml_string(optimizer) +
                          " cannot run with algo.qgm = true: quasi-global momentum is a momentum "
                          "SGD step with its own buffer and replaces the local optimizer; set "
                          "optim.optimizer=sgd or algo.qgm=false";
                 }
                 return std::nullopt;
               }});

  s.add_check({{"optim.nesterov", "optim.momentum", "algo.qgm", "optim.optimizer"},
               [](const Config& c) -> Problem {
                 if (c.get_bool("optim.nesterov") && !c.get_bool("algo.qgm") &&
                     c.get_string("optim.optimizer") == "sgd" &&
                     c.get_float("optim.momentum") == 0) {
                   return "optim.nesterov = true needs momentum: expected optim.momentum in "
                          "(0, 1), or set optim.nesterov=false";
                 }
                 return std::nullopt;
               }});

  s.add_check(
      {{"faults.kill_nodes", "graph.nodes"}, [](const Config& c) -> Problem {
         const auto& kill = c.get_int_list("faults.kill_nodes");
         const std::int64_t nodes = c.get_int("graph.nodes");
         for (const std::int64_t node : kill) {
           if (node < 0 || node >= nodes) {
             return "faults.kill_nodes = " + format_config_value(kill) + " names node " +
                    std::to_string(node) + ", but the nodes are 0 .. " + std::to_string(nodes - 1) +
                    " (graph.nodes = " + std::to_string(nodes) + ")";
           }
         }
         std::vector<std::int64_t> sorted = kill;
         std::sort(sorted.begin(), sorted.end());
         if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
           return "faults.kill_nodes = " + format_config_value(kill) + " names a node twice";
         }
         if (static_cast<std::int64_t>(sorted.size()) >= nodes) {
           return "faults.kill_nodes = " + format_config_value(kill) +
                  " kills every node: leave at least one alive";
         }
         return std::nullopt;
       }});

  s.add_check({{"optim.milestones"}, [](const Config& c) -> Problem {
                 const auto& milestones = c.get_int_list("optim.milestones");
                 if (!std::is_sorted(milestones.begin(), milestones.end()) ||
                     std::adjacent_find(milestones.begin(), milestones.end()) != milestones.end()) {
                   return "optim.milestones = " + format_config_value(milestones) +
                          " is not strictly increasing: expected epochs in increasing order, "
                          "e.g. [100, 150]";
                 }
                 return std::nullopt;
               }});
}

// Config -> struct.
struct FieldReader {
  const Config& config;

  void operator()(std::string_view key, std::string& field) const {
    field = config.get_string(key);
  }
  void operator()(std::string_view key, bool& field) const { field = config.get_bool(key); }
  void operator()(std::string_view key, double& field) const { field = config.get_float(key); }
  void operator()(std::string_view key, std::uint64_t& field) const {
    field = static_cast<std::uint64_t>(config.get_int(key));  // the schema keeps it >= 0
  }
  void operator()(std::string_view key, int& field) const {
    field = to_int(key, config.get_int(key));
  }
  void operator()(std::string_view key, std::vector<int>& field) const {
    field.clear();
    for (const std::int64_t x : config.get_int_list(key)) field.push_back(to_int(key, x));
  }
  template <ConfigEnum E>
  void operator()(std::string_view key, E& field) const {
    const auto value = config_enum_from_string<E>(config.get_string(key));
    LPDT_CHECK(value.has_value(),
               "the schema accepted an unknown name for '" + std::string(key) + "'");
    field = *value;
  }

  int to_int(std::string_view key, std::int64_t value) const {
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      throw ConfigError(config.where(key) + ": key '" + std::string(key) + "' = " +
                        std::to_string(value) + " is out of range: expected an int of at most " +
                        std::to_string(std::numeric_limits<int>::max()));
    }
    return static_cast<int>(value);
  }
};

// struct -> Config. A value equal to the default keeps the origin "default".
struct FieldWriter {
  Config& config;

  void set(std::string_view key, ConfigValue value) const {
    const auto& spec = config.schema().at(key);
    ValueOrigin origin;
    if (value != spec.default_value()) origin.kind = ValueOrigin::Kind::kProgram;
    config.set(key, std::move(value), origin);
  }
  void operator()(std::string_view key, const std::string& field) const { set(key, field); }
  void operator()(std::string_view key, bool field) const { set(key, field); }
  void operator()(std::string_view key, double field) const { set(key, field); }
  void operator()(std::string_view key, std::uint64_t field) const {
    if (field > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw ConfigError("program: key '" + std::string(key) + "' = " + std::to_string(field) +
                        " is out of range: expected an int in [0, 2^63)");
    }
    set(key, static_cast<std::int64_t>(field));
  }
  void operator()(std::string_view key, int field) const {
    set(key, static_cast<std::int64_t>(field));
  }
  void operator()(std::string_view key, const std::vector<int>& field) const {
    set(key, std::vector<std::int64_t>(field.begin(), field.end()));
  }
  template <ConfigEnum E>
  void operator()(std::string_view key, E field) const {
    set(key, std::string(to_string(field)));
  }
};

ConfigSchema build_schema() {
  ConfigSchema schema("lpdt experiment configuration");
  add_keys(schema);
  add_checks(schema);
  // The struct and the schema must name the same keys, each once.
  std::set<std::string> visited;
  const ExperimentConfig defaults;
  visit_fields(defaults, [&](std::string_view key, const auto&) {
    LPDT_CHECK(schema.find(key).has_value(), "field key '" + std::string(key) + "' not in schema");
    LPDT_CHECK(visited.emplace(key).second, "field key '" + std::string(key) + "' visited twice");
  });
  LPDT_CHECK(visited.size() == schema.size(), "a schema key has no ExperimentConfig field");
  return schema;
}

}  // namespace

bool GraphConfig::is_directed(Topology topology) {
  switch (topology) {
    case Topology::kRing:
    case Topology::kTorus:
    case Topology::kComplete:
      return false;
    case Topology::kDirectedRing:
    case Topology::kExponential:
    case Topology::kRandom:
    case Topology::kOnePeerExponential:
      return true;
  }
  return true;
}

const ConfigSchema& experiment_schema() {
  static const ConfigSchema schema = build_schema();
  return schema;
}

Config resolve_experiment_config(const std::optional<std::string>& path,
                                 const std::vector<std::string>& overrides) {
  return experiment_schema().resolve(path, overrides);
}

ExperimentConfig experiment_config_from(const Config& resolved) {
  LPDT_CHECK(&resolved.schema() == &experiment_schema(),
             "experiment_config_from needs a Config of experiment_schema()");
  ExperimentConfig config;
  visit_fields(config, FieldReader{resolved});
  return config;
}

ExperimentConfig load_experiment_config(const std::optional<std::string>& path,
                                        const std::vector<std::string>& overrides) {
  return experiment_config_from(resolve_experiment_config(path, overrides));
}

Config to_config(const ExperimentConfig& config) {
  Config resolved = experiment_schema().defaults();
  visit_fields(config, FieldWriter{resolved});
  resolved.validate();
  return resolved;
}

std::string to_toml(const ExperimentConfig& config) { return to_config(config).to_toml(); }

nlohmann::json to_json(const ExperimentConfig& config) { return to_config(config).to_json(); }

bool arch_uses_model_norm(const std::string& arch) {
  return arch == "resnet" || arch == "resnet18" || arch == "resnet34" || arch == "mobilenetv2" ||
         arch == "vgg11";
}

}  // namespace lpdt
