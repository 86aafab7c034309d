#pragma once
// Test-set evaluation of node-batched models.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "lpdt/data/eval_batches.h"
#include "lpdt/models/model.h"
#include "lpdt/quant/stochastic_draws.h"

namespace lpdt::exp {

struct Evaluation {
  std::vector<double> node_accuracy;  // percent, one per node; empty when not evaluated
  // The node of each node_accuracy entry when not every node was evaluated (the survivors of a
  // run with dead nodes); empty means node_accuracy[i] is node i's.
  std::vector<std::int64_t> node_ids;
  // Over node_accuracy; NaN when the nodes were not evaluated (eval.per_node = false), which the
  // run files write as an empty CSV field and a JSON null, never as 0%.
  double mean_accuracy = 0, min_accuracy = 0, max_accuracy = 0;
  double average_model_accuracy = 0;  // the exact average of the node models, percent
  double consensus_distance = 0;      // mean_i ||x_i - x_bar||^2
};

// Accuracy (percent) of each of the k models on the whole set. On a GPU the k forward passes of a
// test batch run as one batched computation; on the CPU one node per pass (its activations stay
// in cache), and with `workers` > 1 the passes (a node on a test batch each) run side by side on
// that many one-thread workers (core/pass_workers.h), `workers` test batches at a time, so that
// one model (k = 1: the averaged model) uses them too. Each pass computes what it computes in turn
// at one thread: the accuracies do not depend on `workers` (test
// Evaluation.WorkersGiveTheAccuraciesOfPassesInTurn).
// params: [k, P] float32; buffers: each [k, ...] (BatchNorm running statistics).
// draws: the stochastic rounding of an 8-bit model evaluated with quant.eval_rounding =
// stochastic (the official code's evaluation): row i of params draws as node draws.first_node + i,
// test batch b at step draws.step + b (eval_draws makes a fresh key per evaluation). Unused by
// float models and by nearest rounding.
std::vector<double> node_accuracies(const models::Model& model, const at::Tensor& params,
                                    const std::vector<at::Tensor>& buffers,
                                    const data::EvalBatches& batches, int workers = 1,
                                    const quant::DrawKey& draws = {});

// The draws of one evaluation (node_accuracies): steps from 2^62 on, apart from every training
// step, `evaluation` (0, 1, ...: the evaluations of a run, in order) apart by 2^32 test batches.
// first_node: the global id of the first row evaluated.
quant::DrawKey eval_draws(std::uint64_t seed, std::int64_t evaluation, std::int64_t first_node);

// The average model: x_bar = mean_i x_i, buffers averaged the same way. Returns [1, P] and
// buffers [1, ...].
std::pair<at::Tensor, std::vector<at::Tensor>> average_model(
    const at::Tensor& params, const std::vector<at::Tensor>& buffers);

// The evaluation of [k, P] `params` whose per-node accuracies were measured elsewhere (under MPI,
// each rank measures those of the nodes it hosts): `node_accuracy` has one per row, or is empty
// when the nodes were not evaluated (eval.per_node = false). Adds the averaged model's accuracy
// and the consensus distance; `workers` as in node_accuracies.
// The averaged model draws as node `draws.first_node + params.size(0)` (past the rows' ids).
Evaluation evaluation_with_node_accuracies(const models::Model& model, const at::Tensor& params,
                                           const std::vector<at::Tensor>& buffers,
                                           const data::EvalBatches& batches,
                                           std::vector<double> node_accuracy, int workers = 1,
                                           const quant::DrawKey& draws = {});

// Per-node accuracies (if `per_node`), the averaged model's accuracy and the consensus distance;
// `workers` as in node_accuracies.
Evaluation evaluate(const models::Model& model, const at::Tensor& params,
                    const std::vector<at::Tensor>& buffers, const data::EvalBatches& batches,
                    bool per_node, int workers = 1, const quant::DrawKey& draws = {});

}  // namespace lpdt::exp
