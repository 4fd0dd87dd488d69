#include "model/cuda/logits_reader.h"

#include <algorithm>
#include <cstring>

#include "kernels/cuda/logits_topk.h"

namespace mineru {

namespace cu = kernels::cuda;

namespace {

// At least `bytes` of pinned memory in *b (the old contents are not kept when it grows).
Status GrowPinned(cu::PinnedBuffer* b, size_t bytes) {
  if (bytes <= b->size()) return Status::Ok();
  *b = cu::PinnedBuffer();  // the old one first: both need not fit at once
  MINERU_ASSIGN_OR_RETURN(*b, cu::PinnedBuffer::Allocate(bytes));
  return Status::Ok();
}

}  // namespace

// The candidates' output, in 4-byte elements: touched logits [touched], top ids [rows * max_k],
// top logits [rows * max_k], counts [rows].
Status CudaLogitsReader::QueueCandidates(float* logits, int32_t vocab, const std::vector<int32_t>& in,
                                         int64_t rows, int64_t touched, int max_k, cu::StreamHandle stream) {
  const size_t in_bytes = in.size() * 4;
  const size_t out_bytes = static_cast<size_t>(touched + 2 * rows * max_k + rows) * 4;
  MINERU_RETURN_IF_ERROR(GrowPinned(&in_, in_bytes));
  MINERU_RETURN_IF_ERROR(GrowPinned(&out_, out_bytes));
  MINERU_RETURN_IF_ERROR(dev_in_.Reserve(in_bytes));
  MINERU_RETURN_IF_ERROR(dev_out_.Reserve(out_bytes));
  std::memcpy(in_.data(), in.data(), in_bytes);
  MINERU_RETURN_IF_ERROR(dev_in_.buffer().CopyFromHostAsync(in_.data(), in_bytes, 0, stream));
  const int32_t* d_in = dev_in_.as<int32_t>();
  float* d_out = dev_out_.as<float>();
  cu::LogitsTopKShape shape;
  shape.rows = rows;
  shape.vocab = vocab;
  shape.max_k = max_k;
  MINERU_RETURN_IF_ERROR(
      cu::LogitsTopK(logits, shape, d_in, d_in + 2 * rows + 1, d_in + rows + 1, d_out,
                     reinterpret_cast<int32_t*>(d_out + touched), d_out + touched + rows * max_k,
                     reinterpret_cast<int32_t*>(d_out + touched + 2 * rows * max_k), stream));
  return dev_out_.buffer().CopyToHostAsync(out_.data(), out_bytes, 0, stream);
}

Status CudaLogitsReader::Read(const cu::DeviceBuffer& logits, int32_t vocab,
                              const std::vector<LogitsRequest>& requests, const cu::CudaStream& stream,
                              std::vector<RowLogits>* out) {
  const int64_t n = static_cast<int64_t>(requests.size());
  const size_t row_bytes = static_cast<size_t>(vocab) * sizeof(float);
  out->assign(requests.size(), RowLogits());
  if (n == 0) return Status::Ok();
  if (logits.size() < static_cast<size_t>(n) * row_bytes)
    return InvalidArgumentError("ReadLogits: no logits");
  // The request, packed: offsets [n + 1] into the touched ids, k [n], the touched ids. A row that
  // wants its whole row asks for k = 0 and touches nothing (the kernel leaves it as it is).
  std::vector<int32_t> in(static_cast<size_t>(2 * n + 1), 0);
  int max_k = 0;
  int64_t whole = 0;
  for (int64_t i = 0; i < n; ++i) {
    const LogitsRequest& r = requests[static_cast<size_t>(i)];
    const bool cand = r.top_k > 0;
    const int k = cand ? std::min(r.top_k, vocab) : 0;
    if (cand && r.touched) in.insert(in.end(), r.touched->begin(), r.touched->end());
    in[static_cast<size_t>(i + 1)] = static_cast<int32_t>(in.size() - static_cast<size_t>(2 * n + 1));
    in[static_cast<size_t>(n + 1 + i)] = k;
    max_k = std::max(max_k, k);
    whole += cand ? 0 : 1;
  }
  const int64_t touched = in[static_cast<size_t>(n)];
  MINERU_RETURN_IF_ERROR(GrowPinned(&rows_, static_cast<size_t>(whole) * row_bytes));
  Status st = Status::Ok();
  int64_t w = 0;
  for (int64_t i = 0; i < n && st.ok(); ++i) {
    if (requests[static_cast<size_t>(i)].top_k > 0) continue;
    (*out)[static_cast<size_t>(i)].row = rows_.as<float>() + w * vocab;
    st = logits.CopyToHostAsync((*out)[static_cast<size_t>(i)].row, row_bytes,
                                static_cast<size_t>(i) * row_bytes, stream.handle());
    ++w;
  }
  if (st.ok() && whole < n)
    st = QueueCandidates(logits.as<float>(), vocab, in, n, touched, max_k, stream.handle());
  Status done = stream.Synchronize();
  MINERU_RETURN_IF_ERROR(st);
  MINERU_RETURN_IF_ERROR(done);
  if (whole == n) return Status::Ok();
  const float* touched_logits = out_.as<float>();
  const int32_t* top_ids = out_.as<int32_t>() + touched;
  const float* top_logits = out_.as<float>() + touched + n * max_k;
  const int32_t* counts = out_.as<int32_t>() + touched + 2 * n * max_k;
  for (int64_t i = 0; i < n; ++i) {
    const LogitsRequest& r = requests[static_cast<size_t>(i)];
    if (r.top_k <= 0) continue;
    const size_t got = static_cast<size_t>(std::clamp(counts[i], 0, max_k));
    MergeCandidates(r.touched_ids(), touched_logits + in[static_cast<size_t>(i)], top_ids + i * max_k,
                    top_logits + i * max_k, got, &(*out)[static_cast<size_t>(i)]);
  }
  return Status::Ok();
}

}  // namespace mineru
