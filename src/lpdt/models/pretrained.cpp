#include "lpdt/models/pretrained.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/models/safetensors.h"

namespace lpdt::models {
namespace {

// A file tensor's name as the model names it: Hugging Face's task models prefix the encoder with
// "distilbert.".
std::string model_name(const std::string& file_name) {
  static const std::string kPrefix = "distilbert.";
  return file_name.rfind(kPrefix, 0) == 0 ? file_name.substr(kPrefix.size()) : file_name;
}

bool is_head(const std::string& name) {
  return name.rfind("pre_classifier.", 0) == 0 || name.rfind("classifier.", 0) == 0;
}

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

// i for a tensor of DistilBERT's encoder layer i ("transformer.layer.<i>...."), else -1.
int encoder_layer(const std::string& name) {
  static const std::string kLayer = "transformer.layer.";
  if (name.rfind(kLayer, 0) != 0) return -1;
  const std::size_t end = name.find('.', kLayer.size());
  const std::string digits = name.substr(kLayer.size(), end - kLayer.size());
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoi(digits);
}

// Which setting a transformer tensor of another shape points at. `file` and `model` are the two
// shapes (as many dimensions: the caller compared them); the sizes are DistilBERT's layout:
// word embeddings [V, H], positions [L, H], ffn.lin1 [F, H] and [F], ffn.lin2 [H, F], every other
// encoder tensor [H] or [H, H].
std::string transformer_shape_hint(const std::string& name, at::IntArrayRef file,
                                   at::IntArrayRef model) {
  const auto hidden = [](std::int64_t h) {
    return " (the file's hidden size is " + std::to_string(h) +
           ": set model.transformer_hidden = " + std::to_string(h) + ")";
  };
  const auto ffn = [](std::int64_t f) {
    return " (the file's feed-forward size is " + std::to_string(f) +
           ": set model.transformer_ffn = " + std::to_string(f) + ")";
  };
  if (file.size() != model.size() || file.empty()) return "";
  if (name == "embeddings.word_embeddings.weight" && file.size() == 2) {
    return file[1] != model[1] ? hidden(file[1])
                               : " (data.vocab must be the checkpoint's own vocab.txt)";
  }
  if (name == "embeddings.position_embeddings.weight" && file.size() == 2) {
    return file[1] != model[1] ? hidden(file[1])
                               : " (arch transformer has data.max_length positions; use arch "
                                 "distilbert for a 512-position DistilBERT)";
  }
  if (name.find(".ffn.lin1.") != std::string::npos) {
    return file.size() == 2 && file[1] != model[1] ? hidden(file[1]) : ffn(file[0]);
  }
  if (name.find(".ffn.lin2.weight") != std::string::npos && file.size() == 2) {
    return file[0] != model[0] ? hidden(file[0]) : ffn(file[1]);
  }
  // The other tensors are hidden-sized in every dimension ([hidden] or [hidden, hidden]): the one
  // that differs gives the file's hidden size.
  for (std::size_t d = 0; d < file.size(); ++d) {
    if (file[d] != model[d]) return hidden(file[d]);
  }
  return hidden(file.back());
}

}  // namespace

PretrainedReport load_pretrained(const Model& model, const std::string& path, at::Tensor& params) {
  LPDT_CHECK(params.dim() == 1 && params.numel() == model.num_params() &&
                 params.scalar_type() == at::kFloat,
             "load_pretrained: params must be [P] float32");
  SafetensorsFile file = read_safetensors(path);
  std::map<std::string, std::pair<std::string, at::Tensor>> by_model_name;
  for (auto& [name, tensor] : file.tensors) {
    const auto [it, inserted] = by_model_name.try_emplace(model_name(name), name, tensor);
    if (!inserted) {  // "x" and "distilbert.x": which one the model takes would be a guess
      throw UserError(path + ": tensors '" + it->second.first + "' and '" + name +
                      "' both name the model's '" + it->first + "': keep one of them");
    }
  }
  // Encoder layers the model lacks would be dropped without a word, leaving a shallower network
  // than the checkpoint's: the layer count in [model] is wrong.
  int file_layers = 0, model_layers = 0;
  for (const auto& [name, entry] : by_model_name) {
    file_layers = std::max(file_layers, encoder_layer(name) + 1);
  }
  for (const LayerSegment& segment : model.layout().segments) {
    model_layers = std::max(model_layers, encoder_layer(segment.name) + 1);
  }
  if (model_layers > 0 && file_layers > model_layers) {
    throw UserError(path + ": the checkpoint has " + std::to_string(file_layers) +
                    " encoder layers (transformer.layer.0 .. " + std::to_string(file_layers - 1) +
                    "), the model " + std::to_string(model_layers) +
                    ": set model.transformer_layers = " + std::to_string(file_layers) +
                    " (model.arch = 'distilbert' has 6) rather than drop layers");
  }
  PretrainedReport report;
  std::map<std::string, bool> used;
  const auto& segments = model.layout().segments;
  // Only transformers carry DistilBERT's names; other models are read by lpdt's own names.
  const bool transformer =
      std::any_of(segments.begin(), segments.end(), [](const LayerSegment& x) {
        return x.name == "embeddings.word_embeddings.weight";
      });
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const LayerSegment& segment = segments[s];
    // Quantizer running ranges kept as parameters (quant.range_state = param) are not weights.
    if (!model.registry().trainable()[s]) continue;
    const auto found = by_model_name.find(segment.name);
    if (found == by_model_name.end()) {
      if (is_head(segment.name)) {
        report.fresh.push_back(segment.name);
        continue;
      }
      throw UserError(
          path + ": no tensor '" + segment.name + "'" +
          (transformer ? " (or 'distilbert." + segment.name + "')" : std::string()) +
          " for the model's parameter of shape " + shape_text(segment.shape) +
          (transformer ? ": is this a DistilBERT checkpoint, and do model.arch and "
                         "model.transformer_* describe it?"
                       : ": is this a checkpoint of model '" + model.name() +
                             "' under lpdt's parameter names (layers.csv lists them), and do "
                             "model.arch and model.depth describe it?"));
    }
    const auto& [file_name, tensor] = found->second;
    if (!at::isFloatingType(tensor.scalar_type())) {
      throw UserError(path + ": tensor '" + file_name + "' is " +
                      std::string(c10::toString(tensor.scalar_type())) +
                      ", expected a floating-point parameter");
    }
    if (tensor.sizes() != at::IntArrayRef(segment.shape)) {
      std::string hint;
      // The classifier's rows are the classes; the pre-classifier is [hidden, hidden].
      if (segment.name.rfind("classifier.", 0) == 0) {
        hint = " (a head for another number of classes: the data set's classes decide the "
               "model's; remove the head from the file to start it fresh)";
      } else if (transformer) {
        hint = transformer_shape_hint(segment.name, tensor.sizes(), segment.shape);
      }
      throw UserError(path + ": tensor '" + file_name + "' has shape " +
                      shape_text(tensor.sizes()) + ", the model's '" + segment.name + "' " +
                      shape_text(segment.shape) + hint);
    }
    const at::Tensor values = tensor.to(at::kFloat);
    // A NaN or Inf weight would surface only as a diverged first step, blamed on the lr.
    if (!at::isfinite(values).all().item<bool>()) {
      throw UserError(path + ": tensor '" + file_name +
                      "' holds NaN or infinite values: the file is damaged");
    }
    params.narrow(0, segment.offset, segment.numel).copy_(values.reshape({segment.numel}));
    report.loaded.push_back(segment.name);
    used[found->first] = true;
  }
  for (const auto& [name, entry] : by_model_name) {
    if (!used.count(name)) report.unused.push_back(entry.first);
  }
  // A head is fresh or pretrained as a whole: half of one would train against the other half.
  const auto loaded_head = std::find_if(report.loaded.begin(), report.loaded.end(), is_head);
  if (!report.fresh.empty() && loaded_head != report.loaded.end()) {
    throw UserError(path + ": the file holds part of the classification head ('" + *loaded_head +
                    "') but not '" + report.fresh.front() +
                    "': give the whole head, or remove it from the file to start it fresh");
  }
  return report;
}

}  // namespace lpdt::models
