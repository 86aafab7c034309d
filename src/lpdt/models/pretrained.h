#pragma once
// Pretrained weights for the transformer classifiers from a Hugging Face model.safetensors
// (docs/pretrained.md). The model's parameters carry Hugging Face's DistilBERT names, so loading
// is by name: a file of DistilBertForSequenceClassification ("distilbert.embeddings...",
// "pre_classifier...", "classifier..."), of DistilBertModel (no prefix), or of
// DistilBertForMaskedLM (the masked-LM head's vocab_* tensors are not used) all load.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "lpdt/models/model.h"

namespace lpdt::models {

struct PretrainedReport {
  std::vector<std::string> loaded;      // model parameters set from the file
  std::vector<std::string> fresh;       // classification-head parameters the file lacks (kept)
  std::vector<std::string> unused;      // tensors of the file the model has no parameter for
};

// Sets one node's parameters `params` ([P] float32, model.layout()) from the file at `path`.
// UserError naming the file and the tensor when a shape differs from the model's, when an
// encoder parameter (anything but pre_classifier / classifier) is missing (the sizes in
// [model] do not describe this checkpoint), or when the file holds a non-floating tensor under a
// parameter's name; also when the file has more encoder layers than the model, two tensors
// for one parameter ("x" and "distilbert.x"), or part of the classification head. A head
// trained for another number of classes is a shape error (the message says so). Quantizer ranges kept as parameters are not weights and keep their values.
PretrainedReport load_pretrained(const Model& model, const std::string& path, at::Tensor& params);

}  // namespace lpdt::models
