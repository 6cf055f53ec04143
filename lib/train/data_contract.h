// Model/data contract: whether a model can train on a dataset, checked against what the dataset
// says it provides (data::DataSchema) before anything is built or run.
#pragma once

#include "data/dataset.h"
#include "model/layer_spec.h"
#include "model/model_builder.h"

namespace mpipe::train {

// Throws InputError naming the model key at fault with its file and line ("exp.yaml:12:
// model.layers[3] (linear): outputs 7 classes, but the data (fashion_mnist) has 10") when the
// model `spec`, planned for the data's inputs as `plan`, does not fit `data`:
// - an embedding (which takes token ids) whose input is not a data input, fed data that is not
//   token ids, or with a vocab smaller than its input's;
// - with cross_entropy: targets that are not class labels, or an output that is not one score per
//   class for each target (as many classes as the data, no more, no fewer);
// - with mse: targets that are class labels, or an output with another number of values than a
//   target (or, for an image target of two axes or more, another shape).
// The data's inputs as the model reads them: each of data.data_inputs() by name and shape.
model::ModelInputs model_inputs(const data::Dataset& data);

void check_model_fits_data(const model::ModelSpec& spec, const model::ModelPlan& plan,
                           const data::DataSchema& data);

}  // namespace mpipe::train
