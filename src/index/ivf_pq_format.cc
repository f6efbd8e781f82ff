// Encoders and decoders of the IVF_PQ segment files (see ivf_pq_format.h).
// Pure functions; thread-safe.
#include "index/ivf_pq_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"

namespace vigil::index {
namespace {

static_assert(std::endian::native == std::endian::little, "IVF_PQ files are little-endian");

constexpr char kModelMagic[] = "VGLIVFM1";
constexpr char kListsMagic[] = "VGLIVFL1";
constexpr size_t kMagicBytes = 8;
constexpr size_t kModelHeaderBytes = kMagicBytes + 4 + 4 * 3;
constexpr size_t kListsHeaderBytes = kMagicBytes + 4 + 4 + 8;
constexpr size_t kChecksumBytes = 8;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T Get(std::string_view bytes, size_t pos) {
  T v;
  std::memcpy(&v, bytes.data() + pos, sizeof(T));
  return v;
}

uint64_t PqFloats(const IvfPqModel& m) {
  return static_cast<uint64_t>(m.dim) << m.num_bits;  // M * 2^bits * (dim / M)
}

// Checks the trailing checksum of `bytes` (at least kChecksumBytes long).
Status CheckTrailer(std::string_view bytes, std::string_view what) {
  size_t body = bytes.size() - kChecksumBytes;
  if (Checksum64(bytes.data(), body) != Get<uint64_t>(bytes, body)) {
    return Status::Corruption(std::string(what) + " checksum mismatch");
  }
  return Status::OK();
}

bool AllFinite(const std::vector<float>& v) {
  for (float f : v) {
    if (!std::isfinite(f)) return false;
  }
  return true;
}

Status CheckModelShape(uint8_t num_bits, uint32_t dim, uint32_t partitions, uint32_t sub_vectors) {
  if (!CheckIvfPqBits(num_bits, sub_vectors).ok()) {
    return Status::Corruption("IVF_PQ model has num_bits " + std::to_string(num_bits) + " with " +
                              std::to_string(sub_vectors) + " sub-vectors");
  }
  if (dim == 0 || dim > bounds::kMaxVectorDimension) {
    return Status::Corruption("IVF_PQ model has dimension " + std::to_string(dim));
  }
  if (partitions == 0 || partitions > kIvfPqMaxPartitions) {
    return Status::Corruption("IVF_PQ model has " + std::to_string(partitions) + " partitions");
  }
  if (sub_vectors == 0 || dim % sub_vectors != 0) {
    return Status::Corruption("IVF_PQ model has " + std::to_string(sub_vectors) + " sub-vectors for dimension " +
                              std::to_string(dim));
  }
  return Status::OK();
}

}  // namespace

Status CheckIvfPqBits(uint32_t num_bits, uint32_t num_sub_vectors) {
  if (num_bits == 8) return Status::OK();
  if (num_bits != 4) return Status::InvalidArgument("num_bits must be 4 or 8, got " + std::to_string(num_bits));
  if (num_sub_vectors > kIvfPq4MaxSubVectors) {
    return Status::InvalidArgument("num_bits 4 allows at most " + std::to_string(kIvfPq4MaxSubVectors) +
                                   " sub-vectors, got " + std::to_string(num_sub_vectors));
  }
  return Status::OK();
}

uint32_t IvfPqCodeSize(const IvfPqModel& m) {
  return static_cast<uint32_t>((static_cast<uint64_t>(m.num_sub_vectors) * m.num_bits + 7) / 8);
}

Status CheckIvfPqModel(const IvfPqModel& m) {
  if (m.metric != Metric::kL2 && m.metric != Metric::kCosine && m.metric != Metric::kDot) {
    return Status::Corruption("IVF_PQ model has an unknown metric");
  }
  VIGIL_RETURN_IF_ERROR(CheckModelShape(static_cast<uint8_t>(std::min<uint32_t>(m.num_bits, 255)), m.dim,
                                        m.num_partitions, m.num_sub_vectors));
  if (m.centroids.size() != static_cast<uint64_t>(m.num_partitions) * m.dim || m.pq_centroids.size() != PqFloats(m)) {
    return Status::Corruption("IVF_PQ model centroid arrays do not match its shape");
  }
  if (!AllFinite(m.centroids) || !AllFinite(m.pq_centroids)) {
    return Status::Corruption("IVF_PQ model holds a NaN or infinite centroid value");
  }
  return Status::OK();
}

std::string EncodeIvfPqModel(const IvfPqModel& m) {
  VIGIL_CHECK(CheckIvfPqModel(m).ok());
  std::string out(kModelMagic, kMagicBytes);
  out.reserve(kModelHeaderBytes + (m.centroids.size() + m.pq_centroids.size()) * 4 + kChecksumBytes);
  Put<uint8_t>(&out, static_cast<uint8_t>(m.metric));
  Put<uint8_t>(&out, static_cast<uint8_t>(m.num_bits));
  Put<uint16_t>(&out, 0);
  Put<uint32_t>(&out, m.dim);
  Put<uint32_t>(&out, m.num_partitions);
  Put<uint32_t>(&out, m.num_sub_vectors);
  out.append(reinterpret_cast<const char*>(m.centroids.data()), m.centroids.size() * 4);
  out.append(reinterpret_cast<const char*>(m.pq_centroids.data()), m.pq_centroids.size() * 4);
  Put<uint64_t>(&out, Checksum64(out));
  return out;
}

Result<IvfPqModel> DecodeIvfPqModel(std::string_view bytes) {
  if (bytes.size() < kModelHeaderBytes + kChecksumBytes || bytes.substr(0, kMagicBytes) != kModelMagic) {
    return Status::Corruption("not an IVF_PQ model file (bad magic or too short)");
  }
  VIGIL_RETURN_IF_ERROR(CheckTrailer(bytes, "IVF_PQ model"));
  uint8_t metric = Get<uint8_t>(bytes, 8);
  uint8_t num_bits = Get<uint8_t>(bytes, 9);
  if (metric > static_cast<uint8_t>(Metric::kDot) || Get<uint16_t>(bytes, 10) != 0) {
    return Status::Corruption("IVF_PQ model has an unknown metric or flags");
  }
  IvfPqModel m;
  m.metric = static_cast<Metric>(metric);
  m.num_bits = num_bits;
  m.dim = Get<uint32_t>(bytes, 12);
  m.num_partitions = Get<uint32_t>(bytes, 16);
  m.num_sub_vectors = Get<uint32_t>(bytes, 20);
  VIGIL_RETURN_IF_ERROR(CheckModelShape(num_bits, m.dim, m.num_partitions, m.num_sub_vectors));
  uint64_t centroid_floats = static_cast<uint64_t>(m.num_partitions) * m.dim;
  uint64_t floats = centroid_floats + PqFloats(m);
  if (bytes.size() - kModelHeaderBytes - kChecksumBytes != floats * 4) {
    return Status::Corruption("IVF_PQ model size " + std::to_string(bytes.size()) + " does not match its shape");
  }
  const char* p = bytes.data() + kModelHeaderBytes;
  m.centroids.resize(centroid_floats);
  std::memcpy(m.centroids.data(), p, centroid_floats * 4);
  m.pq_centroids.resize(PqFloats(m));
  std::memcpy(m.pq_centroids.data(), p + centroid_floats * 4, m.pq_centroids.size() * 4);
  VIGIL_RETURN_IF_ERROR(CheckIvfPqModel(m));
  return m;
}

Status WriteIvfPqLists(uint32_t code_size, const std::vector<std::vector<int64_t>>& ids,
                       const std::vector<std::vector<uint8_t>>& codes,
                       const std::function<Status(std::string_view)>& append) {
  VIGIL_CHECK(ids.size() == codes.size() && !ids.empty() && ids.size() <= kIvfPqMaxPartitions);
  StreamingChecksum sum;
  auto emit = [&](std::string_view piece) {
    sum.Update(piece.data(), piece.size());
    return append(piece);
  };
  uint64_t rows = 0;
  for (const auto& l : ids) rows += l.size();
  std::string head(kListsMagic, kMagicBytes);
  Put<uint32_t>(&head, static_cast<uint32_t>(ids.size()));
  Put<uint32_t>(&head, code_size);
  Put<uint64_t>(&head, rows);
  for (const auto& l : ids) Put<uint64_t>(&head, l.size());
  VIGIL_RETURN_IF_ERROR(emit(head));
  for (size_t l = 0; l < ids.size(); ++l) {
    VIGIL_CHECK(codes[l].size() == ids[l].size() * code_size);
    VIGIL_RETURN_IF_ERROR(emit({reinterpret_cast<const char*>(ids[l].data()), ids[l].size() * 8}));
    VIGIL_RETURN_IF_ERROR(emit({reinterpret_cast<const char*>(codes[l].data()), codes[l].size()}));
  }
  std::string trailer;
  Put<uint64_t>(&trailer, sum.Digest());
  return append(trailer);
}

std::string EncodeIvfPqLists(uint32_t code_size, const std::vector<std::vector<int64_t>>& ids,
                             const std::vector<std::vector<uint8_t>>& codes) {
  std::string out;
  Status st = WriteIvfPqLists(code_size, ids, codes, [&](std::string_view piece) {
    out.append(piece);
    return Status::OK();
  });
  VIGIL_CHECK(st.ok());
  return out;
}

RowAddress IvfPqListsView::RowAt(uint32_t list, uint64_t i) const { return Get<uint64_t>(bytes, starts[list] + i * 8); }

const uint8_t* IvfPqListsView::Codes(uint32_t list) const {
  return reinterpret_cast<const uint8_t*>(bytes.data() + starts[list] + counts[list] * 8);
}

Result<IvfPqListsView> ParseIvfPqLists(std::string_view bytes) {
  if (bytes.size() < kListsHeaderBytes + kChecksumBytes || bytes.substr(0, kMagicBytes) != kListsMagic) {
    return Status::Corruption("not an IVF_PQ lists file (bad magic or too short)");
  }
  VIGIL_RETURN_IF_ERROR(CheckTrailer(bytes, "IVF_PQ lists"));
  IvfPqListsView v;
  v.num_partitions = Get<uint32_t>(bytes, 8);
  v.code_size = Get<uint32_t>(bytes, 12);
  v.num_rows = Get<uint64_t>(bytes, 16);
  uint64_t payload = bytes.size() - kListsHeaderBytes - kChecksumBytes;
  if (v.num_partitions == 0 || v.num_partitions > kIvfPqMaxPartitions || v.code_size == 0 ||
      v.code_size > bounds::kMaxVectorDimension || static_cast<uint64_t>(v.num_partitions) * 8 > payload) {
    return Status::Corruption("IVF_PQ lists header is invalid");
  }
  uint64_t data = payload - static_cast<uint64_t>(v.num_partitions) * 8;
  if (v.num_rows > data / (8 + v.code_size) || v.num_rows * (8 + v.code_size) != data) {
    return Status::Corruption("IVF_PQ lists size does not match its row count");
  }
  v.counts.resize(v.num_partitions);
  v.starts.resize(v.num_partitions);
  uint64_t total = 0, offset = kListsHeaderBytes + static_cast<uint64_t>(v.num_partitions) * 8;
  for (uint32_t l = 0; l < v.num_partitions; ++l) {
    uint64_t n = Get<uint64_t>(bytes, kListsHeaderBytes + l * 8ull);
    if (n > v.num_rows - total) return Status::Corruption("IVF_PQ list counts exceed the row count");
    total += n;
    v.counts[l] = n;
    v.starts[l] = offset;
    offset += n * (8 + v.code_size);
  }
  if (total != v.num_rows) return Status::Corruption("IVF_PQ list counts do not add up to the row count");
  v.bytes = bytes;
  return v;
}

}  // namespace vigil::index
