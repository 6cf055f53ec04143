// Fused softmax + cross-entropy: oneDNN logsoftmax over the last axis, then the loss picked at
// the targets and the gradient scale * (exp(logsoftmax) - onehot), exp by Eigen row by row.
#include "kernels/softmax_cross_entropy.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/aligned_rows.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;

memory::desc rows_desc(int64_t rows, int64_t classes) {
  return {{rows, classes}, memory::data_type::f32, memory::format_tag::ab};
}

// log_probs: [rows, classes] = logsoftmax(logits) over the last axis.
void log_softmax(KernelContext& ctx, const float* logits, float* log_probs, int64_t rows,
                 int64_t classes) {
  const dnnl::engine& engine = ctx.engine();
  const auto& primitive =
      ctx.cached<dnnl::logsoftmax_forward>(fmt::format("logsoftmax r{} c{}", rows, classes), [&] {
        dnnl::logsoftmax_forward::desc desc(dnnl::prop_kind::forward_inference,
                                            rows_desc(rows, classes), 1);
        return dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(desc, engine));
      });
  const memory::desc desc = rows_desc(rows, classes);
  primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, memory(desc, engine, const_cast<float*>(logits))},
                                   {DNNL_ARG_DST, memory(desc, engine, log_probs)}});
  ctx.stream().wait();
}

int64_t class_index(float target, int64_t row, int64_t classes) {
  const auto index = static_cast<int64_t>(target);
  check_input(target == static_cast<float>(index) && index >= 0 && index < classes,
              "target {} of row {} is not a class index in [0, {})", target, row, classes);
  return index;
}

}  // namespace

SoftmaxCrossEntropyResult softmax_cross_entropy(KernelContext& ctx, const float* logits,
                                                const float* targets, int64_t rows, int64_t classes,
                                                float grad_scale, float* grad,
                                                const CrossEntropyOptions& options) {
  check(rows >= 0 && classes > 0, "softmax_cross_entropy: bad size [{}, {}]", rows, classes);
  const double smoothing = options.label_smoothing;
  check(smoothing >= 0.0 && smoothing < 1.0, "softmax_cross_entropy: label smoothing {}",
        smoothing);
  SoftmaxCrossEntropyResult result;
  if (rows == 0) return result;
  std::vector<float> scratch;
  float* log_probs = grad;
  if (!log_probs) {
    scratch.resize(static_cast<size_t>(rows * classes));
    log_probs = scratch.data();
  }
  log_softmax(ctx, logits, log_probs, rows, classes);

  // -1 for an ignored row.
  std::vector<int64_t> target_of(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (options.ignore_target && targets[r] == static_cast<float>(*options.ignore_target)) {
      target_of[static_cast<size_t>(r)] = -1;
      continue;
    }
    const int64_t t = class_index(targets[r], r, classes);
    target_of[static_cast<size_t>(r)] = t;
    ++result.counted;
    const float* lp = log_probs + r * classes;
    if (smoothing > 0.0) {
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c) sum += lp[c];
      result.loss_sum -= (1.0 - smoothing) * lp[t] + smoothing / static_cast<double>(classes) * sum;
    } else {
      result.loss_sum -= lp[t];
    }
    const float* z = logits + r * classes;
    if (std::max_element(z, z + classes) - z == t) ++result.correct;
  }
  if (grad) {
    // Row by row into aligned rows (with_aligned_rows): a value's bits depend on its logit and its
    // column alone, the same for a micro-batch's row on every K, schedule and partition.
    const auto uniform = static_cast<float>(grad_scale * smoothing / static_cast<double>(classes));
    const auto at_target = static_cast<float>(grad_scale * (1.0 - smoothing));
#pragma omp parallel
    {
      std::vector<float> row_scratch;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        float* row = grad + r * classes;
        const int64_t t = target_of[static_cast<size_t>(r)];
        if (t < 0) {
          std::fill_n(row, classes, 0.0f);
          continue;
        }
        with_aligned_rows<1>(classes, {row}, row_scratch, true, [&](auto& o) {
          o[0] = grad_scale * o[0].exp();
          if (smoothing > 0.0) o[0] -= uniform;
        });
        row[t] -= at_target;
      }
    }
  }
  return result;
}

}  // namespace mpipe::kernels
