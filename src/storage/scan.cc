#include "dataset_internal.h"

namespace vigil::internal {

namespace {

// Streams one block of every projected column at a time, fragment by fragment.
class Scanner : public RecordBatchReader {
 public:
  Scanner(std::shared_ptr<Dataset> dataset, SchemaPtr projection, std::vector<uint32_t> fragments, bool include_deleted)
      : dataset_(std::move(dataset)),
        projection_(std::move(projection)),
        fragments_(std::move(fragments)),
        include_deleted_(include_deleted) {}

  SchemaPtr schema() const override { return projection_; }

  Result<std::optional<RecordBatch>> Next() override {
    for (;;) {
      if (!reader_) {
        if (next_fragment_ >= fragments_.size()) return std::optional<RecordBatch>();
        VIGIL_RETURN_IF_ERROR(OpenFragment(fragments_[next_fragment_++]));
      }
      if (block_ >= reader_->num_blocks()) {
        reader_.reset();
        continue;
      }
      VIGIL_ASSIGN_OR_RETURN(RecordBatch batch, ReadBlock(block_++));
      if (batch.num_rows > 0) return std::optional<RecordBatch>(std::move(batch));
    }
  }

 private:
  Status OpenFragment(uint32_t id) {
    VIGIL_ASSIGN_OR_RETURN(reader_, dataset_->OpenFragment(id));
    fragment_id_ = id;
    block_ = 0;
    if (include_deleted_) {
      deletions_ = DeletionVector();
    } else {
      VIGIL_ASSIGN_OR_RETURN(deletions_, dataset_->LoadDeletions(id));
    }
    return Status::OK();
  }

  Result<RecordBatch> ReadBlock(size_t block) {
    uint64_t first = static_cast<uint64_t>(block) * reader_->rows_per_block();
    size_t rows = static_cast<size_t>(std::min<uint64_t>(reader_->rows_per_block(), reader_->num_rows() - first));
    std::vector<uint8_t> keep(rows, 1);
    size_t live = rows;
    if (deletions_.Cardinality() > 0) {
      for (size_t r = 0; r < rows; ++r) {
        if (deletions_.Contains(static_cast<uint32_t>(first + r))) {
          keep[r] = 0;
          --live;
        }
      }
    }
    RecordBatch out;
    out.schema = projection_;
    out.num_rows = live;
    if (live == 0) return out;
    for (const auto& f : projection_->fields()) {
      auto col = reader_->ReadBlock(f.id, block);
      if (!col.ok()) return col.status().WithContext(reader_->path());
      if ((*col)->size() != rows) {
        return Status::Corruption(reader_->path() + " block " + std::to_string(block) + " of field " +
                                  std::to_string(f.id) + " has " + std::to_string((*col)->size()) + " rows");
      }
      out.columns.push_back(live == rows ? **col : (*col)->Filter(keep));
    }
    out.row_addresses.reserve(live);
    for (size_t r = 0; r < rows; ++r) {
      if (keep[r]) out.row_addresses.push_back(MakeRowAddress(fragment_id_, static_cast<uint32_t>(first + r)));
    }
    return out;
  }

  std::shared_ptr<Dataset> dataset_;
  SchemaPtr projection_;
  std::vector<uint32_t> fragments_;
  bool include_deleted_;
  size_t next_fragment_ = 0;
  std::shared_ptr<FragmentReader> reader_;
  uint32_t fragment_id_ = 0;
  size_t block_ = 0;
  DeletionVector deletions_;
};

}  // namespace

Result<std::unique_ptr<RecordBatchReader>> NewScanner(std::shared_ptr<Dataset> dataset, ScanOptions options) {
  const SchemaPtr& schema = dataset->schema();
  SchemaPtr projection = schema;
  if (!options.columns.empty()) {
    std::vector<Field> fields;
    for (const auto& name : options.columns) {
      auto idx = schema->IndexOf(name);
      if (!idx) return Status::InvalidArgument("unknown column '" + name + "'");
      fields.push_back(schema->field(*idx));
    }
    VIGIL_ASSIGN_OR_RETURN(projection, Schema::Make(std::move(fields)));
  }
  std::vector<uint32_t> fragments;
  if (options.fragment_ids) {
    for (uint32_t id : *options.fragment_ids) {
      if (dataset->manifest().FindFragment(id) == nullptr) {
        return Status::InvalidArgument("fragment " + std::to_string(id) + " is not in version " +
                                       std::to_string(dataset->version()));
      }
      fragments.push_back(id);
    }
  } else {
    for (const auto& f : dataset->manifest().fragments) fragments.push_back(f.id);
  }
  return std::unique_ptr<RecordBatchReader>(
      new Scanner(std::move(dataset), std::move(projection), std::move(fragments), options.include_deleted));
}

}  // namespace vigil::internal
